package hub_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestHubImportsOnlyHelpers holds hub's place in docs/architecture.md's layers, below state
// (data/table imports it): of this module, hub and hubtest import internal/ packages and
// each other only.
func TestHubImportsOnlyHelpers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/goaccel/goaccel/"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if ok && !strings.HasPrefix(dep, "internal/") && dep != "hub" {
				t.Errorf("%s imports %s", fields[0], imp)
			}
		}
	}
}
