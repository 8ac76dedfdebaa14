package hf

import (
	"sync"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend" // the pure-Go backend
	"github.com/gomlx/go-xla/compute/xla"
)

// The backends dropout is checked on: the pure-Go one, created once per test binary, and
// XLA's CPU plugin (FindCPUPlugin's).
var (
	pureGo     = sync.OnceValues(func() (compute.Backend, error) { return compute.NewWithConfig("go:ops_sequential") })
	xlaBackend = sync.OnceValues(func() (compute.Backend, error) {
		_ = envvar.NoAutoInstall.Set("1")
		return xla.New(testutil.FindCPUPlugin())
	})
)

// mustGoBackend returns the pure-Go backend or fails the test.
func mustGoBackend(t testing.TB) compute.Backend {
	t.Helper()
	b, err := pureGo()
	if err != nil {
		t.Fatalf("creating the pure-Go backend: %v", err)
	}
	return b
}
