// Package tokfuzz holds what the fuzz targets of the tokenizer file readers (models/bert's
// and the tokenizers package's) share: a mutator of JSON documents that edits their tree
// rather than their bytes, so that a fuzzer reaches the shapes a reader must refuse (a
// merge written [], a template naming the other text, a component set to null, an id of
// -1) in a few hundred runs instead of the millions byte flips would take.
package tokfuzz

import (
	"encoding/json"
	"slices"
)

// node is one value of a document, with how to replace it and how to take it out of its
// parent.
type node struct {
	value  any
	depth  int
	under  string // the key of the nearest object field above it
	set    func(any)
	remove func()
}

// numbers are the values an edit may put for a number: edges of the ids and lengths a
// reader checks.
var numbers = []float64{-1, 0, 1, 2, 3, 100, 999999, -2147483649, 4294967296, 0.5, 1e300}

// Mutate returns doc (a JSON document) with the edits that edits spells applied to its tree,
// three bytes an edit: the first chooses a depth (below the root), the second a value at that depth (in a
// walk of the document, the fields of an object in sorted order), the third what becomes of
// it: removed, null, [], {}, a number
// of an edge (numbers), true, one of the strings the document has under the same key,
// or a copy of another value. A doc that is not JSON is returned as it is; so is doc when
// edits is shorter than three bytes.
func Mutate(doc, edits []byte) []byte {
	if len(edits) < 3 {
		return doc
	}
	var root any
	if err := json.Unmarshal(doc, &root); err != nil {
		return doc
	}
	for ; len(edits) >= 3; edits = edits[3:] {
		nodes, byKey := walk(&root)
		// The first byte chooses a depth, the second a value at that depth: a document's
		// few components weigh as much as the thousands of entries of its vocabulary.
		// The root is never chosen: a document replaced whole is no test of a reader.
		depths := levels(nodes)
		if len(depths) < 2 {
			break
		}
		level := depths[1+int(edits[0])%(len(depths)-1)]
		n := level[int(edits[1])%len(level)]
		op, arg := edits[2]%8, int(edits[2]/8)
		switch op {
		case 0:
			n.remove()
		case 1:
			n.set(nil)
		case 2:
			n.set([]any{})
		case 3:
			n.set(map[string]any{})
		case 4:
			n.set(numbers[arg%len(numbers)])
		case 5:
			n.set(true)
		case 6:
			if same := byKey[n.under]; len(same) > 0 {
				n.set(same[arg%len(same)])
			}
		case 7:
			n.set(clone(nodes[(arg*7919+int(edits[1]))%len(nodes)].value))
		}
	}
	out, err := json.Marshal(root)
	if err != nil {
		return doc
	}
	return out
}

// walk lists the values of the document *root (the root first) and the distinct strings
// found under each key.
func walk(root *any) ([]node, map[string][]any) {
	var nodes []node
	byKey := map[string][]any{}
	var visit func(v any, depth int, under string, set func(any), remove func())
	visit = func(v any, depth int, under string, set func(any), remove func()) {
		nodes = append(nodes, node{value: v, depth: depth, under: under, set: set, remove: remove})
		switch v := v.(type) {
		case string:
			if !slices.Contains(byKey[under], any(v)) {
				byKey[under] = append(byKey[under], v)
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				visit(v[k], depth+1, k, func(e any) { v[k] = e }, func() { delete(v, k) })
			}
		case []any:
			for i := range v {
				// Taking an element out of an array is replacing the array, in its parent,
				// by one without it.
				visit(v[i], depth+1, under, func(e any) { v[i] = e }, func() { set(slices.Delete(slices.Clone(v), i, i+1)) })
			}
		}
	}
	visit(*root, 0, "", func(e any) { *root = e }, func() { *root = nil })
	return nodes, byKey
}

// levels groups nodes by depth, the root's (0) first.
func levels(nodes []node) [][]node {
	var out [][]node
	for _, n := range nodes {
		for len(out) <= n.depth {
			out = append(out, nil)
		}
		out[n.depth] = append(out[n.depth], n)
	}
	return out
}

// clone is a deep copy of a decoded JSON value.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = clone(e)
		}
		return out
	}
	return v
}

// Shrink returns a tokenizer.json (doc) cut down to a size a fuzzer mutates quickly: its
// model's vocabulary cut to the ids below n (a Unigram list to its first n pieces), its
// merges to the first n, its added tokens to those with an id below n. A doc it cannot read
// is returned as it is.
func Shrink(doc []byte, n int) []byte {
	var d map[string]any
	if json.Unmarshal(doc, &d) != nil {
		return doc
	}
	below := func(v any) bool { f, ok := v.(float64); return ok && f < float64(n) }
	if m, ok := d["model"].(map[string]any); ok {
		switch v := m["vocab"].(type) {
		case []any:
			m["vocab"] = v[:min(n, len(v))]
		case map[string]any:
			for tok, id := range v {
				if !below(id) {
					delete(v, tok)
				}
			}
		}
		if merges, ok := m["merges"].([]any); ok {
			m["merges"] = merges[:min(n, len(merges))]
		}
	}
	if added, ok := d["added_tokens"].([]any); ok {
		keep := []any{}
		for _, a := range added {
			if a, ok := a.(map[string]any); ok && below(a["id"]) {
				keep = append(keep, a)
			}
		}
		d["added_tokens"] = keep
	}
	out, err := json.Marshal(d)
	if err != nil {
		return doc
	}
	return out
}
