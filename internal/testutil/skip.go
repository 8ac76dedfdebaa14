package testutil

import (
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
)

// Missing is for a test that cannot run without an optional tool or file (a Python package,
// gcc, the XLA plugin): it skips the test with a line that starts with SKIPPING and names what
// is missing and how to get it, except when the CI environment variable is set, where `make
// deps` and .ci/run install everything the tests need and the absence fails the test.
func Missing(t testing.TB, what, how string) {
	t.Helper()
	msg := "SKIPPING: " + what + " (" + how + ")"
	if envvar.CI.Value() != "" {
		t.Fatal("CI is set but " + msg)
	}
	t.Skip(msg)
}

// Long marks a test of the second tier: one that takes long (a soak, a large model, a build of
// other programs) and that `make test` (go test -short) leaves to `make test-all` and .ci/run,
// which run every test. why says what makes it long; the skip line names the tier.
func Long(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("TIER 2 (make test-all, .ci/run): " + why)
	}
}
