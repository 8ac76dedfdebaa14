package flagsuggest

import (
	"testing"

	flag "github.com/spf13/pflag"
)

func TestNearest(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	for _, name := range []string{"batch_size", "nproc-per-node", "max_steps", "epochs"} {
		fs.Int(name, 0, "")
	}
	for _, c := range []struct{ given, want string }{
		{"bach_size", "batch_size"},  // a typo
		{"batch-size", "batch_size"}, // the other separator
		{"nproc_per_nod", "nproc-per-node"},
		{"max", "max_steps"}, // a prefix
		{"epoch", "epochs"},
		{"learning_rate", ""}, // nothing close
		{"xyz", ""},
	} {
		if got := Nearest(fs, c.given); got != c.want {
			t.Errorf("Nearest(%q) = %q, want %q", c.given, got, c.want)
		}
	}
}
