package shell

import (
	"os/exec"
	"strings"
	"testing"
)

// TestQuoteRoundTrips: sh reads every quoted word back as the word, and plain words stay
// unquoted.
func TestQuoteRoundTrips(t *testing.T) {
	words := []string{"", "plain", "a b", "it's", `"dq"`, "$HOME", "`id`", "a;b", "x*", "~", "50%", "1+1", "tab\there",
		"new\nline", `back\slash`, "--flag=v", "host:1,2@x"}
	out, err := exec.Command("sh", "-c", "set -- "+Join(words)+`; for w in "$@"; do printf '%s\0' "$w"; done`).Output()
	if err != nil {
		t.Fatalf("sh -c: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if strings.Join(got, "|") != strings.Join(words, "|") {
		t.Errorf("sh read back\n  %q\nwant\n  %q", got, words)
	}
	for _, w := range []string{"plain", "--flag=v", "host:1,2@x", "./a/b"} {
		if Quote(w) != w {
			t.Errorf("Quote(%q) = %q, want it unquoted", w, Quote(w))
		}
	}
}
