package envvar

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// moduleRoot is the module's folder, two levels above this package.
const moduleRoot = "../.."

// envFuncs are the functions of os and syscall that read or write the process's environment.
var envFuncs = map[string][]string{
	"os":      {"Getenv", "LookupEnv", "Environ", "Setenv", "Unsetenv", "Clearenv", "ExpandEnv"},
	"syscall": {"Getenv", "Setenv", "Unsetenv", "Clearenv", "Environ"},
}

// envUses parses the module's non-test .go files and returns "file:line: pkg.Func" for every
// use (a call, or the function passed as a value) of envFuncs outside this package.
func envUses(t *testing.T, root string) []string {
	t.Helper()
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	var uses []string
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "models-cache" || name == "vendor") {
				return filepath.SkipDir
			}
			if abs, _ := filepath.Abs(path); abs == self {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		local := map[string]string{} // the file's name for os/syscall -> the package
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if _, ok := envFuncs[p]; !ok {
				continue
			}
			name := p
			if imp.Name != nil {
				name = imp.Name.Name
			}
			local[name] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if pkg, ok := local[id.Name]; ok && slices.Contains(envFuncs[pkg], sel.Sel.Name) {
				rel, _ := filepath.Rel(root, path)
				uses = append(uses, fmt.Sprintf("%s:%d: %s.%s", rel, fset.Position(sel.Pos()).Line, pkg, sel.Sel.Name))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return uses
}

// TestNoEnvironmentOutsideTheTable: no non-test file of the module reads or writes the
// environment except through this package, without exception.
func TestNoEnvironmentOutsideTheTable(t *testing.T) {
	for _, u := range envUses(t, moduleRoot) {
		t.Errorf("%s: read and write the environment through internal/envvar (its table declares every variable)", u)
	}
}

// TestEnvUsesFindsEveryForm: the scan sees a call, a renamed import and the function passed as
// a value, and leaves test files and other packages' Getenv alone.
func TestEnvUsesFindsEveryForm(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "package a\n\nimport \"os\"\n\nvar x = os.Getenv(\"X\")\n")
	write("b.go", "package a\n\nimport sys \"os\"\n\nfunc f(g func(string) string) {}\n\nfunc h() { f(sys.Getenv); _ = sys.Environ() }\n")
	write("c.go", "package a\n\nimport \"syscall\"\n\nfunc k() { syscall.Setenv(\"A\", \"B\") }\n")
	write("d_test.go", "package a\n\nimport \"os\"\n\nvar y = os.Getenv(\"Y\")\n")
	write("e.go", "package a\n\ntype o struct{}\n\nfunc (o) Getenv(string) string { return \"\" }\n\nvar os o\nvar z = os.Getenv(\"Z\")\n")
	got := envUses(t, dir)
	want := []string{"a.go:5: os.Getenv", "b.go:7: os.Getenv", "b.go:7: os.Environ", "c.go:5: syscall.Setenv"}
	if !slices.Equal(got, want) {
		t.Errorf("envUses = %q, want %q", got, want)
	}
}

// TestTableIsWellFormed: names are unique environment names, every entry has a one-line
// meaning, a kind and who sets it.
func TestTableIsWellFormed(t *testing.T) {
	setters := []Setter{User, Launch, Torchrun, OpenMPI, Hydra, Srun, OS, Goaccel, Container, CIService, Kubeflow}
	kinds := []Kind{KindString, KindInt, KindDuration, KindBool, KindPaths, KindSlurmCount}
	seen := map[string]bool{}
	for _, v := range All() {
		if v.Name == "" || strings.Trim(v.Name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
			t.Errorf("%q is not an environment variable's name", v.Name)
		}
		if seen[v.Name] {
			t.Errorf("%s is declared twice", v.Name)
		}
		seen[v.Name] = true
		if v.Meaning == "" || strings.Contains(v.Meaning, "\n") || strings.Contains(v.Meaning, "|") {
			t.Errorf("%s: meaning %q: want one line without '|'", v.Name, v.Meaning)
		}
		if !slices.Contains(kinds, v.Kind) {
			t.Errorf("%s: unknown kind %q", v.Name, v.Kind)
		}
		if len(v.SetBy) == 0 {
			t.Errorf("%s: nobody sets it", v.Name)
		}
		for _, s := range v.SetBy {
			if !slices.Contains(setters, s) {
				t.Errorf("%s: unknown setter %q", v.Name, s)
			}
		}
	}
	for _, name := range []string{"RANK", "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "GOACCEL_HOME", "GOACCEL_TIMEOUT", "GOACCEL_VERIFY"} {
		if Find(name) == nil {
			t.Errorf("Find(%q) = nil", name)
		}
	}
	if v := Find(Timeline.Name); v.Planned || v.Kind != KindString {
		t.Errorf("%s: planned %v, kind %s; want a read string", v.Name, v.Planned, v.Kind)
	}
}

// TestParsers: each kind's parser, and errors that name the variable and quote the value.
func TestParsers(t *testing.T) {
	t.Setenv(Rank.Name, "3")
	t.Setenv(WorldSize.Name, "")
	t.Setenv(LocalRank.Name, "x")
	t.Setenv(SlurmNTasksPerNode.Name, "2(x3)")
	if n, set, err := Rank.Int(); n != 3 || !set || err != nil {
		t.Errorf("RANK=3: Int() = %d, %v, %v", n, set, err)
	}
	if n, set, err := WorldSize.Int(); n != 0 || set || err != nil {
		t.Errorf("WORLD_SIZE empty: Int() = %d, %v, %v; want unset", n, set, err)
	}
	if _, set, err := LocalRank.Int(); !set || err == nil || !strings.Contains(err.Error(), `$LOCAL_RANK="x"`) {
		t.Errorf("LOCAL_RANK=x: Int() = %v, %v; want an error naming it", set, err)
	}
	if n, _, err := SlurmNTasksPerNode.Int(); n != 2 || err != nil {
		t.Errorf("SLURM_NTASKS_PER_NODE=2(x3): Int() = %d, %v; want 2", n, err)
	}
	t.Setenv(Timeout.Name, "90")
	if d, set, err := Timeout.Duration(); d != 90*time.Second || !set || err != nil {
		t.Errorf("GOACCEL_TIMEOUT=90: Duration() = %s, %v, %v", d, set, err)
	}
	t.Setenv(Timeout.Name, "soon")
	if _, _, err := Timeout.Duration(); err == nil || !strings.Contains(err.Error(), `$GOACCEL_TIMEOUT="soon"`) {
		t.Errorf("GOACCEL_TIMEOUT=soon: %v; want an error naming it", err)
	}
	for v, want := range map[string]time.Duration{"90s": 90 * time.Second, "30m": 30 * time.Minute, "2.5": 2500 * time.Millisecond} {
		if d, err := ParseDuration(v); d != want || err != nil {
			t.Errorf("ParseDuration(%q) = %s, %v; want %s", v, d, err, want)
		}
	}
	for _, v := range []string{"", "0", "-1s", "1e300"} {
		if _, err := ParseDuration(v); err == nil {
			t.Errorf("ParseDuration(%q): no error", v)
		}
	}
	t.Setenv(LaunchDebug.Name, "1")
	if b, err := LaunchDebug.Bool(); !b || err != nil {
		t.Errorf("GOACCEL_LAUNCH_DEBUG=1: %v, %v", b, err)
	}
	t.Setenv(LaunchDebug.Name, "maybe")
	if _, err := LaunchDebug.Bool(); err == nil || !strings.Contains(err.Error(), "GOACCEL_LAUNCH_DEBUG") {
		t.Errorf("GOACCEL_LAUNCH_DEBUG=maybe: %v; want an error naming it", err)
	}
	for value, want := range map[string]string{"": "", "system": "system", " System\t": "system", "KEEP": "keep"} {
		t.Setenv(HostMalloc.Name, value)
		if w, err := HostMalloc.Choice(); w != want || err != nil {
			t.Errorf("GOACCEL_HOST_MALLOC=%q: Choice() = %q, %v; want %q", value, w, err, want)
		}
	}
	for _, value := range []string{"bogus", "systemd", "system2", "keep me", "\nsystem"} {
		t.Setenv(HostMalloc.Name, value)
		_, err := HostMalloc.Choice()
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("$GOACCEL_HOST_MALLOC=%q", value)) ||
			!strings.Contains(err.Error(), `"system" or "keep"`) {
			t.Errorf("GOACCEL_HOST_MALLOC=%q: %v; want an error naming it and the valid values", value, err)
		}
	}
	t.Setenv(PluginPath.Name, "/a::/b/x.so:")
	if got := PluginPath.Paths(); !slices.Equal(got, []string{"/a", "/b/x.so"}) {
		t.Errorf("Paths() = %q", got)
	}
	if v, ok := Lookup([]string{"RANK=1", "A=B", "RANK=2"}, Rank.Name); v != "2" || !ok {
		t.Errorf("Lookup = %q, %v; want the last definition, 2", v, ok)
	}
	if kv := Rank.KV("7"); kv != "RANK=7" {
		t.Errorf("KV = %q", kv)
	}
}

// TestUndeclaredNamePanics: Getenv and Lookup refuse a name the table lacks.
func TestUndeclaredNamePanics(t *testing.T) {
	for name, f := range map[string]func(){
		"Getenv": func() { Getenv("GOACCEL_NOT_DECLARED") },
		"Lookup": func() { Lookup(nil, "GOACCEL_NOT_DECLARED") },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "GOACCEL_NOT_DECLARED") {
					t.Errorf("%s of an undeclared name: recovered %v, want a panic naming it", name, r)
				}
			}()
			f()
		}()
	}
}

var update = flag.Bool("update", false, "rewrite docs/environment.md from the table")

// markdown is docs/environment.md, made from the table.
func markdown() string {
	var b strings.Builder
	b.WriteString("# Environment variables\n\n")
	b.WriteString("Every variable goaccel's library and commands read or write, in one table: `internal/envvar/table.go`\n")
	b.WriteString("(the tests' own switches, such as `GOACCEL_TORCH_PYTHON` or `GOACCEL_TEST_BERT_BASE`, are named\n")
	b.WriteString("where the tests that read them are described: docs/families.md, docs/sharding.md). This page is made\n")
	b.WriteString("from it (`go test ./internal/envvar -run TestDoc -update`; the test fails when they differ), and\n")
	b.WriteString("`goaccel env` prints it with the values set in your environment. A variable marked *planned* is\n")
	b.WriteString("declared for a coming feature and not read yet; of one marked *secret* `goaccel env` says only\n")
	b.WriteString("whether it is set (its output goes into bug reports).\n\n")
	b.WriteString("| Variable | Meaning | Value | Set by |\n|---|---|---|---|\n")
	for _, v := range All() {
		meaning := v.Meaning
		if v.Planned {
			meaning = "*planned, not read yet:* " + meaning
		}
		if v.Secret {
			meaning = "*secret, its value never shown:* " + meaning
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", v.Name, meaning, v.Kind, v.Setters())
	}
	b.WriteString("\nValues: an *integer* is decimal; a *Slurm count* is an integer or Slurm's `2(x3)` form (2 on each\n")
	b.WriteString("of 3 nodes); a *duration* is a positive Go duration (`90s`, `30m`) or a number of seconds (`90`,\n")
	b.WriteString("`2.5`); a *boolean* is `1`, `true`, `0` or `false`; a *path list* is separated by `:`.\n")
	return b.String()
}

// TestDocMatchesTable: docs/environment.md is the table's.
func TestDocMatchesTable(t *testing.T) {
	path := filepath.Join(moduleRoot, "docs", "environment.md")
	want := markdown()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s differs from the table (internal/envvar/table.go): run go test ./internal/envvar -run TestDoc -update", path)
	}
}

// TestRankMark: every launcher's rank variable marks a process as a rank; an empty value or
// variables of no launcher do not.
func TestRankMark(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, ""},
		{[]string{"HOME=/root", "RANK="}, ""},
		{[]string{"SLURM_JOB_ID=7"}, ""},
		{[]string{"RANK=1", "WORLD_SIZE=2"}, "RANK"},
		{[]string{"WORLD_SIZE=2"}, "WORLD_SIZE"},
		{[]string{"PMI_FD=5"}, "PMI_FD"},
		{[]string{"PMI_RANK=0"}, "PMI_RANK"},
		{[]string{"OMPI_COMM_WORLD_RANK=3"}, "OMPI_COMM_WORLD_RANK"},
		{[]string{"SLURM_PROCID=0", "SLURM_NTASKS=2"}, ""}, // an sbatch script: no step, no rank
		{[]string{"SLURM_STEP_ID=0", "SLURM_PROCID=0"}, "SLURM_STEP_ID"},
	} {
		v, _ := RankMark(tc.env)
		got := ""
		if v != nil {
			got = v.Name
		}
		if got != tc.want {
			t.Errorf("RankMark(%q) = %q, want %q", tc.env, got, tc.want)
		}
	}
}
