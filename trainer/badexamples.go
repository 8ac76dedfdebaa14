package trainer

import (
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/data"
)

// skipLister is a data source that leaves broken examples out (data.Skip), as the loaders of
// package data do: how many so far, and which.
type skipLister interface {
	Skipped() int64
	SkippedExamples() []data.SkippedExample
}

// badExamples follows the examples a source left out as broken, for the records and the
// run's log. Its zero value, or one over a source that skips nothing, reports nothing.
type badExamples struct {
	src      skipLister
	recorded int64 // counted in the records so far (or forgotten)
	named    int   // SkippedExamples already named in the log (or forgotten)
	// forgotten and forgottenNamed are the count and the list's length at the last forget:
	// examples left out while reading batches that are read again later.
	forgotten      int64
	forgottenNamed int
}

// forget discounts what the source left out so far: the batches read were rewound (Restore)
// and will be read, and counted, again.
func (b *badExamples) forget() {
	if b.src == nil {
		return
	}
	b.recorded = b.src.Skipped()
	b.named = len(b.src.SkippedExamples())
	b.forgotten, b.forgottenNamed = b.recorded, b.named
}

func newBadExamples(src data.Source) badExamples {
	l, _ := src.(skipLister)
	return badExamples{src: l}
}

// since returns the examples left out since the last call, their count and the errors that
// name them (up to the source's bound on those it keeps).
func (b *badExamples) since() (int64, []data.SkippedExample) {
	if b.src == nil {
		return 0, nil
	}
	n := b.src.Skipped() - b.recorded
	b.recorded += n
	list := b.src.SkippedExamples()
	if b.named > len(list) {
		b.named = len(list)
	}
	fresh := list[b.named:]
	if int64(len(fresh)) > n { // noted after Skipped was read: named with the next count
		fresh = fresh[:n]
	}
	b.named += len(fresh)
	return n, fresh
}

// namedExamples joins up to limit of the examples' errors ("; ") with the count of the rest.
func namedExamples(list []data.SkippedExample, total int64, limit int) string {
	parts := make([]string, 0, min(len(list), limit)+1)
	for i, s := range list {
		if i == limit {
			break
		}
		parts = append(parts, s.Err.Error())
	}
	if rest := total - int64(len(parts)); rest > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", rest))
	}
	return strings.Join(parts, "; ")
}

// summary is the run log's line about the examples of this session that the source left
// out: "the loader left out 3 broken example(s) of the training data 6 time(s) in this
// session (...): a.png: ... (2 times); ...", or "" when there were none.
func (b *badExamples) summary(what string) string {
	if b.src == nil {
		return ""
	}
	n := b.src.Skipped() - b.forgotten
	if n <= 0 {
		return ""
	}
	list := b.src.SkippedExamples()
	list = list[min(b.forgottenNamed, len(list)):]
	// Each pass leaves a broken example out again: name each once, with its count.
	var distinct []data.SkippedExample
	times := map[string]int{}
	for _, s := range list {
		key := s.Err.Error()
		if times[key] == 0 {
			distinct = append(distinct, s)
		}
		times[key]++
	}
	named := make([]string, 0, min(len(distinct), 20)+1)
	for i, s := range distinct {
		if i == 20 {
			named = append(named, fmt.Sprintf("and %d more", len(distinct)-20))
			break
		}
		if k := times[s.Err.Error()]; k > 1 {
			named = append(named, fmt.Sprintf("%v (%d times)", s.Err, k))
		} else {
			named = append(named, s.Err.Error())
		}
	}
	more := ""
	if int64(len(list)) < n {
		more = fmt.Sprintf(" (the first %d named)", len(list))
	}
	return fmt.Sprintf("the loader left out %d broken example(s) of the %s %d time(s) in this session (data.Skip; never trained on nor counted)%s: %s",
		len(distinct), what, n, more, strings.Join(named, "; "))
}
