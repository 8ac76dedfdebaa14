package testutil

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
)

// NeedTransformers is for a test that runs transformers' tokenizers (no torch): it returns
// python3 from $PATH when it imports transformers and tokenizers (make deps installs them
// under .deps/python, which PYTHONPATH must name), or skips the test with a line that starts
// with SKIPPING and says how to get them — except when the CI environment variable is set,
// where their absence fails the test. The versions found are logged.
func NeedTransformers(t testing.TB) string {
	t.Helper()
	python, versions, why := importsTransformers()
	if why == "" {
		t.Logf("%s: %s", python, versions)
		return python
	}
	why = "SKIPPING transformers tokenizer test: " + why +
		" (run make deps, which installs them under .deps/python, and set PYTHONPATH=$GOACCEL_HOME/python)"
	if envvar.CI.Value() != "" {
		t.Fatal("CI is set but " + why)
	}
	t.Skip(why)
	return ""
}

// importsTransformers finds python3 and checks that it imports transformers and tokenizers:
// versions is the last line it printed (transformers may first warn that torch is absent),
// why says what is missing ("" when nothing is).
func importsTransformers() (python, versions, why string) {
	python, err := exec.LookPath("python3")
	if err != nil {
		return "", "", "no python3 in $PATH"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	probe := "import transformers, tokenizers; print('transformers', transformers.__version__, 'tokenizers', tokenizers.__version__)"
	out, err := exec.CommandContext(ctx, python, "-c", probe).CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	versions = lines[len(lines)-1]
	if err != nil {
		return python, "", python + " cannot import transformers and tokenizers (" + versions + ")"
	}
	return python, versions, ""
}
