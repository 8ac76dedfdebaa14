package main

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeQuickstartIsThisProgram keeps the README's quickstart snippet and this program in
// step: the README's Go block must be the lines between README:begin and README:end here
// (without their indentation), so the snippet users copy is code that compiles and runs.
func TestReadmeQuickstartIsThisProgram(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	begin, end := -1, -1
	for i, l := range lines {
		switch {
		case strings.Contains(l, "// README:begin"):
			begin = i
		case strings.Contains(l, "// README:end"):
			end = i
		}
	}
	if begin < 0 || end <= begin {
		t.Fatal("main.go has no README:begin ... README:end block")
	}
	var block []string
	for _, l := range lines[begin+1 : end] {
		block = append(block, strings.TrimPrefix(l, "\t"))
	}
	want := "```go\n" + strings.Join(block, "\n") + "\n```"
	if !strings.Contains(string(readme), want) {
		t.Errorf("README.md's quickstart differs from examples/quickstart/main.go; paste this block into the README:\n%s", want)
	}
}
