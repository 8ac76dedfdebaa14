package testutil

import (
	"slices"
	"strings"
	"testing"
)

// BadFlags checks a program's error words: for each of its flags (names) with a bad value in
// bad, run (the program with args base(t), then --flag value) must fail with output naming
// the flag as the user typed it ("--flag"); every flag must be in bad or in none, which says
// why no value of it is wrong, so that a flag added later gets a case.
func BadFlags(t *testing.T, names []string, base func(t *testing.T) []string, bad, none map[string]string,
	run func(t *testing.T, args []string) (string, error)) {
	t.Helper()
	for _, name := range names {
		value, ok := bad[name]
		if !ok {
			if none[name] == "" {
				t.Errorf("--%s has neither a bad value in the test nor a reason why none is wrong", name)
			}
			continue
		}
		t.Run(name, func(t *testing.T) {
			args := append(base(t), "--"+name, value)
			out, err := run(t, args)
			if err == nil {
				t.Fatalf("--%s %q: the program succeeded, want an error naming the flag:\n%s", name, value, out)
			}
			if !strings.Contains(out, "--"+name) {
				t.Errorf("--%s %q: the error does not name --%s:\n%s", name, value, name, out)
			}
		})
	}
	for name := range bad {
		if !slices.Contains(names, name) {
			t.Errorf("the test has a bad value for --%s, which the program does not have", name)
		}
	}
}
