// Package flagsuggest finds the flag a user most likely meant when they typed an unknown one,
// for the "did you mean" of goaccel's commands and examples.
package flagsuggest

import (
	"strings"

	flag "github.com/spf13/pflag"
)

// Nearest returns the name of fs's flag closest to given (spelled with '_' or '-', without
// leading dashes), or "" when none is close: an edit distance of at most 2 between the names
// with '-' and '_' made equal, or a known name that begins with given or, from 4 characters
// on, contains it. Ties go to the first flag in fs's (sorted) order.
func Nearest(fs *flag.FlagSet, given string) string {
	norm := func(s string) string { return strings.ReplaceAll(s, "-", "_") }
	g := norm(given)
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		name := norm(f.Name)
		d := distance(g, name)
		if strings.HasPrefix(name, g) || (len(g) >= 4 && strings.Contains(name, g)) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// distance is Levenshtein's edit distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
