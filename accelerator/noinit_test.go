package accelerator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoSideEffectAtImport keeps the package, and the block cache it links in, free of init
// functions: importing accelerator must not re-execute, print or change the process at
// import (the block cache runs only when malloc is first asked for a large block; the
// hostmalloc package's re-execution is opt-in by a blank import).
func TestNoSideEffectAtImport(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	cache, err := filepath.Glob("../internal/blockcache/*.go")
	if err != nil || len(cache) == 0 {
		t.Fatalf("the block cache's files: %v %v", cache, err)
	}
	files = append(files, cache...)
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
			if strings.Trim(imp.Path.Value, `"`) == "github.com/goaccel/goaccel/hostmalloc" {
				t.Errorf("%s imports hostmalloc: only programs opt in to its re-execution", name)
			}
		}
	}
}
