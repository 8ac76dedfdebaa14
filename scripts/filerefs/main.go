// Command filerefs counts the references between the files of one Go package: which file uses
// a package-level name, a method or a field that another file of the package declares. It
// prints every file-to-file reference with the names behind it, the groups of files that refer
// to each other around a loop, and references whose removal leaves no loop (the fewest, when
// three or fewer do it): in a drawing of the files in layers, those are the references that
// must run back up.
//
//	go run ./scripts/filerefs ./accelerator
//
// Test files are left out. The package is type-checked from source, so the first run takes
// some seconds.
package main

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: filerefs DIR (a folder holding one Go package)")
		os.Exit(2)
	}
	refs, err := fileRefs(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "filerefs:", err)
		os.Exit(1)
	}
	report(os.Stdout, refs)
}

// ref is one file's references to another: the names it uses there.
type ref struct {
	from, to string
	names    []string
}

// fileRefs type-checks the package in dir (its non-test files) and returns its file-to-file
// references, sorted.
func fileRefs(dir string) ([]ref, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, err // names dir as given
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a folder: give the folder of a Go package", dir)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no Go files", dir)
	}
	// Type-checking from source runs `go tool cgo` for the dependencies that use cgo, and its C
	// compiler leaves object files named srcimporter*_cgo_* in the temporary folder: the ones
	// this run made are removed after it.
	defer removeNew(cgoLeftovers())
	var firstErr error
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil), Error: func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, _ := conf.Check(files[0].Name.Name, fset, files, info)
	if firstErr != nil {
		return nil, fmt.Errorf("type-checking %s: %w", dir, firstErr)
	}
	names := map[[2]string]map[string]bool{}
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || (obj.Parent() != nil && obj.Parent() != pkg.Scope()) {
			continue // another package's name, or a local one
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from == to {
			continue
		}
		k := [2]string{from, to}
		if names[k] == nil {
			names[k] = map[string]bool{}
		}
		names[k][obj.Name()] = true
	}
	var refs []ref
	for k, ns := range names {
		r := ref{from: k[0], to: k[1]}
		for n := range ns {
			r.names = append(r.names, n)
		}
		sort.Strings(r.names)
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool {
		return refs[i].from < refs[j].from || refs[i].from == refs[j].from && refs[i].to < refs[j].to
	})
	return refs, nil
}

// cgoLeftovers returns the names of the cgo object files of a source type-check now in the
// temporary folder.
func cgoLeftovers() map[string]bool {
	names, _ := filepath.Glob(filepath.Join(os.TempDir(), "srcimporter*_cgo_*"))
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return set
}

// removeNew removes the cgo object files that were not there before (cgoLeftovers).
func removeNew(before map[string]bool) {
	for n := range cgoLeftovers() {
		if !before[n] {
			_ = os.Remove(n)
		}
	}
}

// loops returns the groups of two or more files that reach each other (strongly connected
// components), each sorted, largest first.
func loops(refs []ref) [][]string {
	adj := map[string][]string{}
	var nodes []string
	seen := map[string]bool{}
	for _, r := range refs {
		adj[r.from] = append(adj[r.from], r.to)
		for _, n := range []string{r.from, r.to} {
			if !seen[n] {
				seen[n] = true
				nodes = append(nodes, n)
			}
		}
	}
	sort.Strings(nodes)
	index, low, onStack := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range adj[v] {
			if _, ok := index[w]; !ok {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var group []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				group = append(group, w)
				if w == v {
					break
				}
			}
			if len(group) > 1 {
				sort.Strings(group)
				out = append(out, group)
			}
		}
	}
	for _, v := range nodes {
		if _, ok := index[v]; !ok {
			visit(v)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// backRefs returns a small set of references whose removal leaves no loop: for each size k
// from 1 up to 3 (while there are at most maxTries such sets) it tries every set of k
// references inside the loops and returns the first that works (fewest is true: no smaller set
// exists); past that it returns the back edges of a depth-first walk, which also leave no loop
// but may be more than needed.
func backRefs(refs []ref) (back []ref, fewest bool) {
	groups := loops(refs)
	if len(groups) == 0 {
		return nil, true
	}
	in := map[string]int{}
	for g, files := range groups {
		for _, f := range files {
			in[f] = g + 1
		}
	}
	var inner []int // indices in refs of the references inside a loop
	for i, r := range refs {
		if in[r.from] != 0 && in[r.from] == in[r.to] {
			inner = append(inner, i)
		}
	}
	without := func(picked []int) []ref {
		var rest []ref
		for i, r := range refs {
			if !slices.ContainsFunc(picked, func(p int) bool { return inner[p] == i }) {
				rest = append(rest, r)
			}
		}
		return rest
	}
	for k := 1; k <= 3 && k <= len(inner) && choose(len(inner), k) <= maxTries; k++ {
		var found []int
		var try func(start int, picked []int) bool
		try = func(start int, picked []int) bool {
			if len(picked) == k {
				if len(loops(without(picked))) == 0 {
					found = slices.Clone(picked)
					return true
				}
				return false
			}
			for i := start; i < len(inner); i++ {
				if try(i+1, append(picked, i)) {
					return true
				}
			}
			return false
		}
		if try(0, nil) {
			out := make([]ref, len(found))
			for i, p := range found {
				out[i] = refs[inner[p]]
			}
			return out, true
		}
	}
	return dfsBackEdges(refs), false
}

// maxTries bounds the sets of references backRefs tries.
const maxTries = 50_000

// choose is n choose k.
func choose(n, k int) int {
	c := 1
	for i := range k {
		c = c * (n - i) / (i + 1)
	}
	return c
}

// dfsBackEdges returns the references that close a loop in a depth-first walk in file order.
func dfsBackEdges(refs []ref) []ref {
	byFrom := map[string][]ref{}
	var nodes []string
	for _, r := range refs {
		if byFrom[r.from] == nil {
			nodes = append(nodes, r.from)
		}
		byFrom[r.from] = append(byFrom[r.from], r)
	}
	sort.Strings(nodes)
	state := map[string]int{} // 1: on the walk's path, 2: done
	var back []ref
	var walk func(v string)
	walk = func(v string) {
		state[v] = 1
		for _, r := range byFrom[v] {
			switch state[r.to] {
			case 0:
				walk(r.to)
			case 1:
				back = append(back, r)
			}
		}
		state[v] = 2
	}
	for _, v := range nodes {
		if state[v] == 0 {
			walk(v)
		}
	}
	return back
}

// report prints the references, the loops and the references that must run back up.
func report(w io.Writer, refs []ref) {
	files := map[string]bool{}
	for _, r := range refs {
		files[r.from], files[r.to] = true, true
		fmt.Fprintf(w, "%s -> %s: %s\n", r.from, r.to, strings.Join(r.names, " "))
	}
	fmt.Fprintf(w, "\n%d files with references, %d file-to-file references\n", len(files), len(refs))
	groups := loops(refs)
	if len(groups) == 0 {
		fmt.Fprintln(w, "no loop: every reference can point down")
		return
	}
	for _, g := range groups {
		fmt.Fprintf(w, "loop: %s\n", strings.Join(g, ", "))
	}
	back, fewest := backRefs(refs)
	if fewest {
		fmt.Fprintf(w, "references that must run back up (the fewest whose removal leaves no loop): %d\n", len(back))
	} else {
		fmt.Fprintf(w, "references running back up in a depth-first walk (their removal leaves no loop; "+
			"the fewest that do may be less): %d\n", len(back))
	}
	for _, r := range back {
		fmt.Fprintf(w, "  %s -> %s: %s\n", r.from, r.to, strings.Join(r.names, " "))
	}
}
