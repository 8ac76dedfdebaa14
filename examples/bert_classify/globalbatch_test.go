package main

import (
	"strings"
	"testing"
)

// TestGlobalBatchSizeFlag: --global_batch_size replaces --batch_size; both given, a zero or a
// negative one are refused naming the flags and values.
func TestGlobalBatchSizeFlag(t *testing.T) {
	parse := func(args ...string) (options, error) {
		o := defaultOptions()
		fs := newFlagSet(&o)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return o, o.useGlobalBatch(fs)
	}
	o, err := parse("--global-batch-size", "16")
	if err != nil || o.GlobalBatchSize != 16 || o.BatchSize != 0 {
		t.Errorf("--global_batch_size 16: %+v, %v", o, err)
	}
	if o, err := parse("--batch_size", "4"); err != nil || o.GlobalBatchSize != 0 || o.BatchSize != 4 {
		t.Errorf("--batch_size 4: %+v, %v", o, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--global_batch_size", "16", "--batch_size", "4"}, "--batch_size 4 and --global_batch_size 16 are both given"},
		{[]string{"--global_batch_size", "0"}, "--global_batch_size 0: must be at least 1"},
		{[]string{"--global_batch_size", "-3"}, "--global_batch_size -3: must be at least 1"},
	} {
		if _, err := parse(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
