package hub_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/hub"
	"github.com/goaccel/goaccel/hub/hubtest"
	"github.com/goaccel/goaccel/internal/testutil"
)

var measure = flag.Bool("hub.measure", false, "run TestMeasure: docs/hub.md's figures (a 100 MB file, goaccel and huggingface_hub)")

// TestMeasure prints docs/hub.md's figures: a cold download of a 100 MB file from the stand-in
// on loopback by goaccel and by huggingface_hub, side by side, twice each in turn; and the same
// download cut once at 40 MB, with the bytes each client fetched after the cut.
func TestMeasure(t *testing.T) {
	if !*measure {
		t.Skip("a measurement, not a check: go test ./hub -run TestMeasure -hub.measure -v (docs/hub.md)")
	}
	py := testutil.Python(t, "huggingface_hub", "huggingface_hub (make deps)")
	clean(t)
	s := hubtest.NewServer()
	defer s.Close()
	const size = 100 << 20
	s.Commit("model", "org/big", map[string][]byte{"model.safetensors": bytesOf(size, 5)})
	ctx := context.Background()
	goDownload := func() time.Duration {
		c, err := hub.New(hub.Options{Endpoint: s.URL, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := c.Download(ctx, hub.Repo{ID: "org/big"}, "model.safetensors"); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	// The Python side times hf_hub_download alone (its import timed apart).
	pyDownload := func() (download, imp float64) {
		out := pyHub(t, py, s.URL, t.TempDir(), false, `
import time
t0 = time.perf_counter()
from huggingface_hub import hf_hub_download
t1 = time.perf_counter()
hf_hub_download("org/big", "model.safetensors")
t2 = time.perf_counter()
print(t2 - t1, t1 - t0)`)
		if _, err := fmt.Sscan(out, &download, &imp); err != nil {
			t.Fatalf("%v: %q", err, out)
		}
		return download, imp
	}
	for round := 1; round <= 2; round++ {
		g := goDownload()
		p, imp := pyDownload()
		t.Logf("round %d: goaccel %.3f s (%.0f MB/s), huggingface_hub %.3f s (%.0f MB/s; its import %.2f s more): ratio %.2f",
			round, g.Seconds(), size/1e6/g.Seconds(), p, size/1e6/p, imp, p/g.Seconds())
	}
	cutAt := int64(40 << 20)
	after := func(from int) string {
		var parts []string
		for _, r := range s.Requests()[from:] {
			if r.Server == "cdn" {
				parts = append(parts, fmt.Sprintf("GET Range %q: %d bytes", r.Range, r.Sent))
			}
		}
		return strings.Join(parts, "; ")
	}
	s.Cut("model.safetensors", cutAt, 1)
	from := len(s.Requests())
	goDownload()
	t.Logf("goaccel, the connection cut at %d bytes: %s", cutAt, after(from))
	s.Cut("model.safetensors", cutAt, 1)
	from = len(s.Requests())
	pyDownload()
	t.Logf("huggingface_hub, the connection cut at %d bytes: %s", cutAt, after(from))
	if out, err := exec.Command("uptime").Output(); err == nil {
		t.Logf("load: %s", strings.TrimSpace(string(out)))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				t.Logf("cpu: %s", l)
				break
			}
		}
	}
}
