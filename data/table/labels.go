package table

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Labels is a label map: label i is Names()[i]. Labels are compared as text: integers in
// decimal, booleans as false and true. It is saved as the JSON list of its names, in id order.
type Labels struct {
	names []string
	ids   map[string]int
}

// NewLabels returns the map whose label i is names[i] (for instance the names saved with a
// run). The names must be distinct and at least one.
func NewLabels(names []string) (*Labels, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("table: an empty label map")
	}
	l := &Labels{names: slices.Clone(names), ids: make(map[string]int, len(names))}
	for i, n := range names {
		if j, dup := l.ids[n]; dup {
			return nil, fmt.Errorf("table: label %q is both %d and %d in the map", n, j, i)
		}
		l.ids[n] = i
	}
	return l, nil
}

// sortedLabels numbers the distinct labels in sorted order: numerically if all are integers,
// else by code point (Go's string order on UTF-8, which is Python's sorted() on str).
func sortedLabels(set map[string]bool) *Labels {
	names := make([]string, 0, len(set))
	numeric := true
	for n := range set {
		names = append(names, n)
		if _, ok := canonicalInt(n); !ok {
			numeric = false
		}
	}
	if numeric {
		slices.SortFunc(names, func(a, b string) int {
			x, _ := canonicalInt(a)
			y, _ := canonicalInt(b)
			return cmpInt(x, y)
		})
	} else {
		slices.Sort(names)
	}
	l, _ := NewLabels(names) // distinct by construction
	return l
}

func cmpInt(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// canonicalInt parses s as an integer written the way strconv.FormatInt writes it (no sign
// but a leading -, no leading zeros), so that each integer label has one text.
func canonicalInt(s string) (int64, bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && strconv.FormatInt(v, 10) == s
}

// Len is the number of labels (the classifier's number of classes).
func (l *Labels) Len() int { return len(l.names) }

// Names are the labels in id order.
func (l *Labels) Names() []string { return slices.Clone(l.names) }

// ID returns the id of label name, and whether the map has it.
func (l *Labels) ID(name string) (int, bool) {
	id, ok := l.ids[name]
	return id, ok
}

// String lists the map as 0="neg" 1="pos" (the first 20 labels, then how many there are).
func (l *Labels) String() string {
	var sb strings.Builder
	for i, n := range l.names {
		if i == 20 {
			fmt.Fprintf(&sb, " ... (%d labels)", len(l.names))
			break
		}
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%d=%s", i, strconv.Quote(n))
	}
	return sb.String()
}

// MarshalJSON writes the names in id order.
func (l *Labels) MarshalJSON() ([]byte, error) { return json.Marshal(l.names) }

// UnmarshalJSON reads a list of names, as MarshalJSON writes it.
func (l *Labels) UnmarshalJSON(b []byte) error {
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return err
	}
	m, err := NewLabels(names)
	if err != nil {
		return err
	}
	*l = *m
	return nil
}
