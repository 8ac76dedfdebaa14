package docsnippets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// snippet is one block of Go that a user may copy.
type snippet struct {
	where   string // file:line, as the failure names it
	code    string
	context string // package-level declarations of the names it uses but does not declare
}

// imports maps the package names that snippets use to their import paths.
var imports = map[string]string{
	"accelerator": "github.com/goaccel/goaccel/accelerator",
	"bert":        "github.com/goaccel/goaccel/models/bert",
	"modernbert":  "github.com/goaccel/goaccel/models/modernbert",
	"auto":        "github.com/goaccel/goaccel/models/auto",
	"lora":        "github.com/goaccel/goaccel/models/lora",
	"deberta":     "github.com/goaccel/goaccel/models/deberta",
	"resnet":      "github.com/goaccel/goaccel/models/resnet",
	"tokenizers":  "github.com/goaccel/goaccel/tokenizers",
	"checkpoint":  "github.com/goaccel/goaccel/checkpoint",
	"data":        "github.com/goaccel/goaccel/data",
	"metrics":     "github.com/goaccel/goaccel/metrics",
	"mpi":         "github.com/goaccel/goaccel/internal/mpi",
	"optim":       "github.com/goaccel/goaccel/optim",
	"progress":    "github.com/goaccel/goaccel/trainer/progress",
	"safetensors": "github.com/goaccel/goaccel/checkpoint/safetensors",
	"sample":      "github.com/goaccel/goaccel/models/bert/sample",
	"spawn":       "github.com/goaccel/goaccel/spawn",
	"table":       "github.com/goaccel/goaccel/data/table",
	"text":        "github.com/goaccel/goaccel/data/text",
	"trainer":     "github.com/goaccel/goaccel/trainer",
	"dtypes":      "github.com/gomlx/compute/dtypes",
	"graph":       "github.com/gomlx/gomlx/core/graph",
	"tensors":     "github.com/gomlx/gomlx/core/tensors",
	"model":       "github.com/gomlx/gomlx/ml/model",
	"optimizer":   "github.com/gomlx/gomlx/ml/train/optimizer",
	"errors":      "errors",
	"fmt":         "fmt",
	"log":         "log",
	"os":          "os",
	"strings":     "strings",
	"time":        "time",
}

// godocContext declares, for the godoc code blocks of a file (by its path in the module), the
// names they use but do not declare.
var godocContext = map[string]string{
	"accelerator/backward.go": `var acc *accelerator.Accelerator; var job *accelerator.Job
		func myLoss(*model.Scope, accelerator.GraphBatch) *graph.Node { return nil }
		var s *model.Scope; var perToken, tokenMask, tokenMaskF *graph.Node`,
	"accelerator/compose.go": `var acc *accelerator.Accelerator; var job *accelerator.Job
		func logits(*model.Scope, *graph.Node) *graph.Node { return nil }`,
	"accelerator/doc.go": `var store *model.Store; var loader data.Source; var testLoader data.Source; var epochs int
		var clf *bert.Classifier; var predict accelerator.EvalFn`,
	"accelerator/gather.go":    `var job *accelerator.Job; var testLoader data.Source; var eval *accelerator.EvalStep`,
	"accelerator/group.go":     `var acc *accelerator.Accelerator`,
	"accelerator/loss.go":      `var logits *graph.Node; var b accelerator.GraphBatch`,
	"checkpoint/doc.go":        `var outDir string; var acc *accelerator.Accelerator; var job *accelerator.Job; var cfg struct{}; var loader *data.Loader[text.Labeled]; var seed int64`,
	"data/doc.go":              `var dir string; var seed int64; var tok *bert.Tokenizer; var acc *accelerator.Accelerator; var opt optimizer.Interface; var store *model.Store`,
	"data/table/doc.go":        `var tok *bert.Tokenizer`,
	"data/text/doc.go":         `var dir string; var seed int64; var tok *bert.Tokenizer`,
	"internal/mpi/doc.go":      `var weightBytes []byte; var grads [][]float32; var steps int`,
	"metrics/doc.go":           `var evalBatches []struct{ Preds, Labels []int; Real []bool; Losses []float64 }`,
	"models/auto/doc.go":       `var train data.Dataset[text.Labeled]; var acc *accelerator.Accelerator; var opt optimizer.Interface; var testLoader data.Source`,
	"models/modernbert/doc.go": `var modelDir, outDir string; var acc *accelerator.Accelerator; var opt optimizer.Interface; var loader data.Source`,
	"models/deberta/doc.go":    `var modelDir, outDir string; var acc *accelerator.Accelerator; var opt optimizer.Interface; var loader data.Source`,
	"models/resnet/doc.go":     `var modelDir, outDir string; var acc *accelerator.Accelerator; var opt optimizer.Interface; var loader data.Source`,
	"models/bert/doc.go":       `var modelDir, outDir string; var trainSet data.Dataset[text.Labeled]; var acc *accelerator.Accelerator; var opt optimizer.Interface`,
	"optim/adam.go":            `var acc *accelerator.Accelerator; var store *model.Store; var loader data.Source`,
	"trainer/doc.go":           `var store *model.Store; var clf *bert.Classifier; var trainLoader, testLoader data.Source`,
	"trainer/interrupt.go":     `var tr *trainer.Trainer; var train, eval data.Source`,
	"trainer/progress/progress.go": `var src data.Source; var job *accelerator.Job; var total int64; var step int64
		var loss float64; var examples int; var testLoader data.Source; var evalStep *accelerator.EvalStep; var accuracy float64
		var prog *progress.Bar`,
}

// TestSnippetsCompile compiles every Go snippet of README.md, docs/*.md and the godoc, each as
// a package of its own (its context, its code in a function, the imports it uses) laid over an
// internal folder of the module with go build -overlay, so that nothing is written into the
// checkout. A snippet that fails names its file and line and shows go build's message.
func TestSnippetsCompile(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	snippets := markdownSnippets(t, root)
	nMarkdown := len(snippets)
	snippets = append(snippets, godocSnippets(t, root)...)
	if nMarkdown < 2 || len(snippets)-nMarkdown < 10 {
		t.Fatalf("found %d Markdown and %d godoc snippets: the extraction is broken", nMarkdown, len(snippets)-nMarkdown)
	}
	tmp := t.TempDir()
	overlay := map[string]string{}
	var pkgs []string
	byFile := map[string]snippet{}
	for i, s := range snippets {
		src, err := wrap(s, i)
		if err != nil {
			t.Errorf("%s: %v\n%s", s.where, err, s.code)
			continue
		}
		file := filepath.Join(tmp, fmt.Sprintf("s%03d.go", i))
		if err := os.WriteFile(file, src, 0o644); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "internal", "docsnippets", "gen", fmt.Sprintf("s%03d", i))
		overlay[filepath.Join(dir, "snippet.go")] = file
		pkgs = append(pkgs, "./internal/docsnippets/gen/"+fmt.Sprintf("s%03d", i))
		byFile[file] = s
	}
	ov, _ := json.Marshal(map[string]any{"Replace": overlay})
	ovFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovFile, ov, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"build", "-overlay", ovFile}, pkgs...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	t.Logf("compiled %d snippets (%d from Markdown, %d from godoc)", len(pkgs), nMarkdown, len(snippets)-nMarkdown)
	if err == nil {
		return
	}
	// Group go build's messages by snippet.
	msgs := map[string][]string{}
	for _, line := range strings.Split(string(out), "\n") {
		for file := range byFile {
			if strings.Contains(line, file) {
				msgs[file] = append(msgs[file], strings.Replace(line, file, "snippet", 1))
			}
		}
	}
	if len(msgs) == 0 {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	files := make([]string, 0, len(msgs))
	for f := range msgs {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		s := byFile[f]
		src, _ := os.ReadFile(f)
		t.Errorf("%s: the snippet does not compile:\n%s\n--- the snippet:\n%s\n--- as compiled:\n%s", s.where,
			strings.Join(msgs[f], "\n"), s.code, numbered(src))
	}
}

// contextComment is the HTML comment that declares a Markdown snippet's context.
var contextComment = regexp.MustCompile(`(?s)<!--\s*snippet-context:(.*?)-->\s*$`)

// markdownSnippets returns the ```go blocks of README.md and docs/*.md.
func markdownSnippets(t *testing.T, root string) []snippet {
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []snippet
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "```go" {
				continue
			}
			start := i
			var code []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				code = append(code, lines[i])
			}
			ctx := ""
			before := strings.Join(lines[:start], "\n")
			if at := strings.LastIndex(before, "<!--"); at >= 0 {
				if m := contextComment.FindStringSubmatch(before[at:]); m != nil {
					ctx = m[1]
				}
			}
			rel, _ := filepath.Rel(root, f)
			out = append(out, snippet{where: fmt.Sprintf("%s:%d", rel, start+1), code: strings.Join(code, "\n"), context: ctx})
		}
	}
	return out
}

// godocSnippets returns the code blocks of the doc comments of the module's non-test Go files
// that parse as Go statements or declarations. A block that looks like Go (it declares with
// :=) but does not parse is returned too, so that the test shows it.
func godocSnippets(t *testing.T, root string) []snippet {
	var out []snippet
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "models-cache") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		for _, g := range docComments(f) {
			var p comment.Parser
			for _, block := range p.Parse(g.Text()).Content {
				code, ok := block.(*comment.Code)
				if !ok || !looksLikeGo(code.Text) {
					continue
				}
				out = append(out, snippet{where: fmt.Sprintf("%s:%d (godoc)", rel, fset.Position(g.Pos()).Line),
					code: code.Text, context: godocContext[filepath.ToSlash(rel)]})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// docComments returns a file's package comment and the doc comments of its declarations.
func docComments(f *ast.File) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	if f.Doc != nil {
		out = append(out, f.Doc)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		var doc *ast.CommentGroup
		switch n := n.(type) {
		case *ast.FuncDecl:
			doc = n.Doc
		case *ast.GenDecl:
			doc = n.Doc
		case *ast.TypeSpec:
			doc = n.Doc
		case *ast.ValueSpec:
			doc = n.Doc
		case *ast.Field:
			doc = n.Doc
		}
		if doc != nil && !slices.Contains(out, doc) {
			out = append(out, doc)
		}
		return true
	})
	return out
}

// looksLikeGo says whether a code block of a doc comment is Go: it parses as statements or
// declarations, or it declares with := (Go meant to compile, even if it does not parse).
func looksLikeGo(code string) bool {
	if strings.Contains(code, ":=") {
		return true
	}
	fset := token.NewFileSet()
	if _, err := parser.ParseFile(fset, "", "package p\nfunc _() {\n"+code+"\n}\n", 0); err == nil {
		return strings.Contains(code, "(") && !strings.HasPrefix(strings.TrimSpace(code), "go ")
	}
	if _, err := parser.ParseFile(fset, "", "package p\n"+code+"\n", 0); err == nil {
		return strings.Contains(code, "func ")
	}
	return false
}

// wrap makes the source of a package that holds the snippet: as declarations when it parses
// as such, else as the body of a function that returns an error, where every name the snippet
// declares is then used (a snippet shows a call, not what a program does with its result); the
// imports are those of the package names it uses. A line that is only "..." stands for the
// user's own code and is left out.
func wrap(s snippet, i int) ([]byte, error) {
	var kept []string
	for _, l := range strings.Split(s.code, "\n") {
		if strings.TrimSpace(l) != "..." {
			kept = append(kept, l)
		}
	}
	code := strings.Join(kept, "\n")
	fset := token.NewFileSet()
	var body string
	if _, err := parser.ParseFile(fset, "", "package p\n"+code+"\n", 0); err == nil && !strings.Contains(code, ":=") {
		body = code
	} else {
		f, err := parser.ParseFile(fset, "", "package p\nfunc snippet() error {\n"+code+"\nreturn nil\n}\n", 0)
		if err != nil {
			return nil, fmt.Errorf("the snippet is not Go: %v", err)
		}
		fn := f.Decls[0].(*ast.FuncDecl)
		useDeclared(fn.Body)
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, fn); err != nil {
			return nil, err
		}
		body = b.String()
	}
	all := s.context + "\n" + body
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "package s%03d\n\nimport (\n", i)
	names := make([]string, 0, len(imports))
	for name := range imports {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if regexp.MustCompile(`(^|[^\w.])` + name + `\.`).MatchString(all) {
			fmt.Fprintf(&buf, "\t%q\n", imports[name])
		}
	}
	if regexp.MustCompile(`(^|[^\w.])(\*?Node)\b`).MatchString(all) {
		buf.WriteString("\t. \"github.com/gomlx/gomlx/core/graph\"\n")
	}
	fmt.Fprintf(&buf, ")\n\n%s\n\n%s\n", s.context, body)
	return buf.Bytes(), nil
}

// useDeclared adds, after every := and var of block and of the blocks inside it, and at the
// start of the body of a for, range or if that declares names, a statement that uses those
// names, so that a snippet that does nothing with a result still compiles.
func useDeclared(block *ast.BlockStmt) {
	uses := func(ids []*ast.Ident) []ast.Stmt {
		var out []ast.Stmt
		for _, id := range ids {
			if id.Name != "_" {
				out = append(out, &ast.AssignStmt{Lhs: []ast.Expr{ast.NewIdent("_")}, Tok: token.ASSIGN, Rhs: []ast.Expr{ast.NewIdent(id.Name)}})
			}
		}
		return out
	}
	defined := func(st ast.Stmt) []*ast.Ident {
		var ids []*ast.Ident
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						ids = append(ids, id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok {
				for _, sp := range g.Specs {
					if v, ok := sp.(*ast.ValueSpec); ok {
						ids = append(ids, v.Names...)
					}
				}
			}
		}
		return ids
	}
	ast.Inspect(block, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt:
			var list []ast.Stmt
			for _, st := range n.List {
				list = append(list, st)
				list = append(list, uses(defined(st))...)
			}
			n.List = list
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				var ids []*ast.Ident
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if id, ok := e.(*ast.Ident); ok {
						ids = append(ids, id)
					}
				}
				n.Body.List = append(uses(ids), n.Body.List...)
			}
		case *ast.IfStmt:
			if n.Init != nil {
				n.Body.List = append(uses(defined(n.Init)), n.Body.List...)
			}
		case *ast.ForStmt:
			if n.Init != nil {
				n.Body.List = append(uses(defined(n.Init)), n.Body.List...)
			}
		}
		return true
	})
}

// numbered returns src with line numbers, for a failure's message.
func numbered(src []byte) string {
	var b strings.Builder
	for i, l := range strings.Split(string(src), "\n") {
		fmt.Fprintf(&b, "%3d  %s\n", i+1, l)
	}
	return b.String()
}
