package auto

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPackageArrows holds the package picture of docs/architecture.md: no model family
// imports another (each imports models/internal/hf for what they share), nothing under
// models/internal imports a family, and tokenizers/ imports no model package. The families
// are the packages directly under models/ but auto (the registry), lora and nn (used by any).
func TestPackageArrows(t *testing.T) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./models/...", "./tokenizers/...")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/goaccel/goaccel/"
	family := func(pkg string) string { // "models/bert" for models/bert and models/bert/sample
		parts := strings.Split(strings.TrimPrefix(pkg, module), "/")
		if len(parts) < 2 || parts[0] != "models" || slices.Contains([]string{"auto", "lora", "nn", "internal"}, parts[1]) {
			return ""
		}
		return "models/" + parts[1]
	}
	families := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if f := family(fields[0]); f != "" {
			families[f] = true
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			f, g := family(fields[0]), family(imp)
			switch {
			case f != "" && g != "" && f != g:
				t.Errorf("family %s imports family %s (%s)", pkg, g, dep)
			case strings.HasPrefix(pkg, "models/internal/") && g != "":
				t.Errorf("%s imports family %s", pkg, dep)
			case strings.HasPrefix(pkg, "tokenizers") && strings.HasPrefix(dep, "models/"):
				t.Errorf("%s imports %s, a model package", pkg, dep)
			}
		}
	}
	if len(families) < 3 {
		t.Errorf("found the families %v: want models/bert, models/deberta, models/modernbert at least", families)
	}
}
