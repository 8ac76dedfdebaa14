package launch

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// checkStore reads what the "store" workers of dir left: rank 0 heard every other rank.
func checkStore(t *testing.T, dir string, world int, out *syncBuffer) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "store_0"))
	if err != nil {
		t.Fatalf("rank 0 did not serve its store: %v\n%s", err, out)
	}
	for r := 1; r < world; r++ {
		if !strings.Contains(string(raw), "hello from rank "+strconv.Itoa(r)) {
			t.Errorf("rank 0's store did not hear rank %d: %q", r, raw)
		}
	}
}

// Rank 0 binds MASTER_ADDR:MASTER_PORT, as PyTorch's init_process_group does, and the other
// ranks reach it there: MASTER_PORT is not the launcher's own (PMI) port.
func TestRankZeroBindsMasterPort(t *testing.T) {
	cfg, dir, out := testJob(t, "store", 3, "GOACCEL_DEVICES=3")
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	checkStore(t, dir, 3, out)
}

// With --master_port P the launcher listens on P (for the launchers only) and the ranks get P+1
// as MASTER_PORT.
func TestMasterPortPlusOne(t *testing.T) {
	cfg, dir, out := testJob(t, "store", 2, "GOACCEL_DEVICES=2")
	cfg.MasterPort = freePort(t)
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	checkStore(t, dir, 2, out)
	cfg, dir, out = testJob(t, "env", 2, "GOACCEL_DEVICES=2")
	p := freePort(t)
	cfg.MasterPort = p
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	for r := 0; r < 2; r++ {
		env := readEnvFile(t, filepath.Join(dir, "env_"+strconv.Itoa(r)))
		if env["MASTER_PORT"] != strconv.Itoa(p+1) {
			t.Errorf("rank %d: MASTER_PORT=%s, want %d (--master_port %d + 1)", r, env["MASTER_PORT"], p+1, p)
		}
	}
}

// Two launchers (the code path of two machines): ranks 2 and 3 of node_rank 1 reach rank 0's
// store on node_rank 0.
func TestTwoNodesRankZeroStore(t *testing.T) {
	c0, dir, out := testJob(t, "store", 2, "GOACCEL_DEVICES=2")
	c1 := c0
	c1.LogDir = filepath.Join(dir, "logs1")
	for i, err := range runNodes(t, []Config{c0, c1}) {
		if err != nil {
			t.Fatalf("node %d: %v\n%s", i, err, out)
		}
	}
	checkStore(t, dir, 4, out)
}
