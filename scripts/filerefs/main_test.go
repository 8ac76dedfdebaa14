package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestLoopFound: testdata/loop's a.go and b.go refer to each other (a field of type B, a
// method that calls newA), c.go refers to both from outside the loop; one reference must
// run back up, and it is one of the two inside the loop.
func TestLoopFound(t *testing.T) {
	refs, err := fileRefs("testdata/loop")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	report(&out, refs)
	t.Log("\n" + out.String())
	for _, want := range []string{"a.go -> b.go: B", "b.go -> a.go: A newA", "c.go -> a.go: A b", "c.go -> b.go: make",
		"4 file-to-file references", "loop: a.go, b.go", "must run back up (the fewest whose removal leaves no loop): 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	back, fewest := backRefs(refs)
	if !fewest || len(back) != 1 || !(back[0].from == "a.go" && back[0].to == "b.go" || back[0].from == "b.go" && back[0].to == "a.go") {
		t.Errorf("back references %v, want one of a.go <-> b.go", back)
	}
}

// TestNoLoop: without b.go's reference back to a.go there is nothing to run back up.
func TestNoLoop(t *testing.T) {
	refs := []ref{{from: "a.go", to: "b.go"}, {from: "c.go", to: "a.go"}, {from: "c.go", to: "b.go"}}
	if g := loops(refs); len(g) != 0 {
		t.Errorf("loops %v, want none", g)
	}
	if b, _ := backRefs(refs); len(b) != 0 {
		t.Errorf("back references %v, want none", b)
	}
	// Two separate loops need two references back up.
	refs = append(refs, ref{from: "b.go", to: "a.go"}, ref{from: "d.go", to: "e.go"}, ref{from: "e.go", to: "d.go"})
	if b, fewest := backRefs(refs); len(b) != 2 || !fewest {
		t.Errorf("back references %v, want 2", b)
	}
}

// TestBadDir names the folder as given: missing, a file, or a folder without Go files.
func TestBadDir(t *testing.T) {
	for dir, want := range map[string]string{"testdata/none": "no such file", "main.go": "not a folder", "testdata": "no Go files"} {
		if _, err := fileRefs(dir); err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), want) {
			t.Errorf("fileRefs(%q): err %v, want one naming %s and saying %q", dir, err, dir, want)
		}
	}
}

// TestNothingLeftInTMPDIR: type-checking a package whose dependencies use cgo (os/user) leaves
// nothing in $TMPDIR.
func TestNothingLeftInTMPDIR(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	if _, err := fileRefs("testdata/cgouser"); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left in $TMPDIR: %s", e.Name())
	}
	if os.Getenv("TMPDIR") != dir {
		t.Errorf("$TMPDIR is %q after fileRefs, want %q back", os.Getenv("TMPDIR"), dir)
	}
}
