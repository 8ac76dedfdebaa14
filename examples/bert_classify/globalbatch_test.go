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
		if !fs.Changed("global_batch_size") {
			return o, o.check()
		}
		if err := o.useGlobalBatch(fs.Changed("batch_size") || fs.Changed("per_device_train_batch_size")); err != nil {
			return o, err
		}
		return o, o.check()
	}
	o, err := parse("--global-batch-size", "16")
	if err != nil || o.GlobalBatchSize != 16 || o.BatchSize != 0 {
		t.Errorf("--global_batch_size 16: %+v, %v", o, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--global_batch_size", "16", "--batch_size", "4"}, "--batch_size 4 and --global_batch_size 16 are both given"},
		{[]string{"--global_batch_size", "16", "--per_device_train_batch_size", "4"}, "are both given"},
		{[]string{"--global_batch_size", "0"}, "--global_batch_size 0: must be at least 1"},
		{[]string{"--global_batch_size", "-3"}, "--global_batch_size -3: must be at least 1"},
	} {
		if _, err := parse(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	o = defaultOptions()
	o.GlobalBatchSize = 8 // set in code along with the default --batch_size
	if err := o.check(); err == nil || !strings.Contains(err.Error(), "cannot be given with --batch_size") {
		t.Errorf("GlobalBatchSize with BatchSize: %v", err)
	}
}
