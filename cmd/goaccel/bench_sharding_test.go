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

// TestBenchBadFlagsNameTheFlag: a bad value of a flag of goaccel bench that sets a Config
// field (--precision, --devices, --sharding) is a usage error naming the flag, before any
// worker starts. (--backend is checked by each worker's accelerator.New, whose error the
// table shows against the work, naming Config.Backend.)
func TestBenchBadFlagsNameTheFlag(t *testing.T) {
	for flag, value := range map[string]string{"precision": "fp8", "devices": "0", "sharding": "zero9",
		"sweep_max_tokens": "-5", "sweep_redraw": "/no/such/run"} {
		t.Run(flag, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := benchCmd([]string{"--work", "mlp", "--python", "none", "--" + flag, value}, &out, &errOut)
			if code != 2 || !strings.Contains(errOut.String(), "--"+flag) {
				t.Errorf("--%s %s: status %d, stderr %q; want 2 and the flag named", flag, value, code, errOut.String())
			}
		})
	}
}
