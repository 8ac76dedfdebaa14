package accelerator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoSideEffectAtImport keeps the package free of init functions and of process-wide
// levers: importing accelerator must not re-execute, print or change how the process
// allocates. The block cache (internal/blockcache, a malloc of its own) and hostmalloc's
// re-execution are opt-in, by a blank import of hostmalloc in the program (as
// uber-go/automaxprocs is): a library linking its own malloc into every program that imports
// it would make a program linking another malloc, or linked statically, fail to link.
func TestNoSideEffectAtImport(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range f.Decls {
			if fd, ok := obj.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
				t.Errorf("%s: func init: a side effect at import of accelerator (put it in its own package)", fset.Position(fd.Pos()))
			}
		}
		for _, imp := range f.Imports {
			switch strings.Trim(imp.Path.Value, `"`) {
			case "github.com/goaccel/goaccel/hostmalloc", "github.com/goaccel/goaccel/internal/blockcache":
				t.Errorf("%s imports %s: only programs opt in to host-memory settings", name, imp.Path.Value)
			}
		}
	}
}

// TestBlockCacheNotLinked checks the whole import graph: no package that accelerator
// imports, directly or not, links the block cache in.
func TestBlockCacheNotLinked(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasSuffix(pkg, "/internal/blockcache") || strings.HasSuffix(pkg, "goaccel/hostmalloc") {
			t.Errorf("accelerator depends on %s: importing it would replace the program's malloc", pkg)
		}
	}
}
