package testutil

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInternalImportsNothingAbove: no package under internal/, tests included, imports a
// package of the module outside internal/ (the accelerator, trainer, checkpoint, hostmalloc
// and the rest sit above it; what imports them lives beside them, as accelerator/acceltest,
// examples/internal and cmd/goaccel/internal do).
func TestInternalImportsNothingAbove(t *testing.T) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./internal/...")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./internal/...: %v", err)
	}
	const module = "github.com/goaccel/goaccel/"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if rest, ok := strings.CutPrefix(imp, module); ok && !strings.HasPrefix(rest, "internal/") {
				t.Errorf("%s imports %s, a package above internal/", fields[0], imp)
			}
		}
	}
}
