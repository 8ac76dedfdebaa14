package accelerator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoSideEffectAtImport keeps the package free of init functions: importing accelerator
// must not re-execute, print or change the process (the hostmalloc package holds the one
// process-wide lever, opt-in by a blank import).
func TestNoSideEffectAtImport(t *testing.T) {
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
				t.Errorf("%s: func init in package accelerator: a side effect at import (put it in its own package)", fset.Position(fd.Pos()))
			}
		}
		for _, imp := range f.Imports {
			if strings.Trim(imp.Path.Value, `"`) == "github.com/goaccel/goaccel/hostmalloc" {
				t.Errorf("%s imports hostmalloc: only programs opt in to its re-execution", name)
			}
		}
	}
}
