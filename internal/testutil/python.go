package testutil

import (
	"encoding/json"
	"fmt"
	"os"
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

// RunPythonJSON runs python -c script with args, its standard error passed through, and
// decodes the JSON document the script prints last on its standard output into out; it fails
// the test, saying what the script was for (what), when the script fails or prints no such
// document.
func RunPythonJSON(t testing.TB, what, python, script string, out any, args ...string) {
	t.Helper()
	cmd := exec.Command(python, append([]string{"-c", script}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %s failed: %v", what, python, err)
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		t.Fatalf("%s: reading the Python output %q: %v", what, stdout, err)
	}
}

// TorchPython returns the Python that GOACCEL_TORCH_PYTHON names (a venv outside the
// repository with torch, transformers, tokenizers, sentencepiece, peft and seqeval: `make
// torch-venv` builds it, and make test-all and .ci/run set the variable to it), for the half of
// a test that compares goaccel with PyTorch, transformers or PEFT at run time; half says what
// that part checks. Without the variable, or when it names no file, the test is skipped with a
// line that starts with SKIPPING, except when the CI environment variable is set: CI builds
// the venv, and its absence fails the test.
func TorchPython(t testing.TB, half string) string {
	t.Helper()
	python := envvar.TorchPython.Value()
	why := "GOACCEL_TORCH_PYTHON (a Python with torch, transformers and peft, outside the repository) is not set"
	if python != "" {
		if _, err := os.Stat(python); err != nil {
			why = fmt.Sprintf("GOACCEL_TORCH_PYTHON names %s: %v", python, err)
		} else {
			return python
		}
	}
	Missing(t, half+": "+why, "make torch-venv, then GOACCEL_TORCH_PYTHON=$(make -s torch-python)")
	return ""
}
