package half

import (
	"math"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend" // the pure-Go backend
	"github.com/gomlx/go-xla/compute/xla"
)

// The backends Product is checked on: the pure-Go one always, XLA's CPU plugin when installed
// (models/internal/familytest has the same, but it imports models/bert, which imports half).
var (
	goBackend  = sync.OnceValues(func() (compute.Backend, error) { return compute.NewWithConfig("go:ops_sequential") })
	xlaBackend = sync.OnceValues(func() (compute.Backend, error) {
		_ = envvar.NoAutoInstall.Set("1")
		return xla.New(testutil.FindCPUPlugin())
	})
)

// mustGoBackend returns the pure-Go backend or fails the test.
func mustGoBackend(t testing.TB) compute.Backend {
	t.Helper()
	b, err := goBackend()
	if err != nil {
		t.Fatalf("creating the pure-Go backend: %v", err)
	}
	return b
}

// testBackends is the pure-Go backend and, when the plugin is installed, XLA's CPU one (the
// test says loudly when it is not, and fails under CI).
func testBackends(t *testing.T) map[string]compute.Backend {
	t.Helper()
	backends := map[string]compute.Backend{"go": mustGoBackend(t)}
	if testutil.FindCPUPlugin() == "" {
		testutil.Missing(t, "the XLA CPU plugin, so this test's XLA half", "run `make deps`, and the test with GOACCEL_HOME=$PWD/.deps")
		return backends
	}
	b, err := xlaBackend()
	if err != nil {
		t.Fatalf("creating the XLA CPU backend: %v", err)
	}
	backends["xla-cpu"] = b
	return backends
}

// maxAbs is the largest magnitude in values.
func maxAbs(values []float32) float64 {
	m := 0.0
	for _, v := range values {
		m = max(m, math.Abs(float64(v)))
	}
	return m
}
