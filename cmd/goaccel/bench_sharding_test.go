package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchShardingFlag: a sharding goaccel does not know is a usage error (status 2) that
// names it and the valid values, before any worker starts.
func TestBenchShardingFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	code := benchCmd([]string{"--work", "mlp", "--sharding", "no,zero4", "--python", "none"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), `sharding "zero4": valid values are no, zero1, zero2, zero3`) {
		t.Errorf("--sharding no,zero4: status %d, stderr %q; want 2 and the valid values", code, errOut.String())
	}
}
