package testutil

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
)

// Python returns a python3 from $PATH that imports module (for example "pyarrow.parquet" or
// "transformers"), for a test that checks goaccel's files against a Python library. Without one
// the test is skipped with a line that starts with SKIPPING, naming what to install (install,
// such as "pip's pyarrow (make deps)"), except when the CI environment variable is set: there
// the Python dependencies are installed by make deps (on the PYTHONPATH the Makefile exports),
// and their absence fails the test.
func Python(t testing.TB, module, install string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		var out []byte
		if out, err = exec.Command(py, "-c", "import "+module).CombinedOutput(); err != nil {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			err = fmt.Errorf("%s cannot import %s: %s", py, module, lines[len(lines)-1]) // the exception's line
		}
	}
	if err == nil {
		return py
	}
	msg := fmt.Sprintf("SKIPPING %s test: needs python3 with %s (the test with PYTHONPATH=$PWD/.deps/python): %v",
		module, install, err)
	if envvar.CI.Value() != "" {
		t.Fatal("CI is set but " + msg)
	}
	t.Skip(msg)
	return ""
}

// NeedTransformers is Python for a test that runs transformers' tokenizers and configurations
// (no torch): python3 that imports transformers and tokenizers, which make deps installs under
// .deps/python. The versions found are logged.
func NeedTransformers(t testing.TB) string {
	t.Helper()
	py := Python(t, "transformers, tokenizers", "transformers and tokenizers (make deps)")
	probe := "import transformers, tokenizers; print('transformers', transformers.__version__, 'tokenizers', tokenizers.__version__)"
	if out, err := exec.Command(py, "-c", probe).Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Logf("%s: %s", py, lines[len(lines)-1])
	}
	return py
}
