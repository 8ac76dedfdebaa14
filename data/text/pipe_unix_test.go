//go:build unix

package text

import (
	"github.com/goaccel/goaccel/data"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"
)

// TestLoadPolarityNamedPipes reads the pair of files from named pipes, each fed once by a
// goroutine, as `LoadPolarity <(zcat pos.gz) <(zcat neg.gz)` does: a reader that opens a
// file twice (once to detect the encoding, once to read it) waits forever for a second writer.
func TestLoadPolarityNamedPipes(t *testing.T) {
	dir := t.TempDir()
	feed := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skipf("SKIPPED: no named pipes here: %v", err)
		}
		go func() {
			f, err := os.OpenFile(p, os.O_WRONLY, 0) // blocks until the reader opens the pipe
			if err != nil {
				return
			}
			defer f.Close()
			_, _ = f.WriteString(content) // fails with EPIPE if the reader closed early
		}()
		return p
	}
	pos := feed("pos", "caf\xe9 good\nfine\n")
	neg := feed("neg", "bad\n")
	type result struct {
		ds  data.Slice[Labeled]
		err error
	}
	done := make(chan result, 1)
	go func() {
		ds, err := LoadPolarity(pos, neg)
		done <- result{ds, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		want := data.Slice[Labeled]{{Text: "café good", Label: 1}, {Text: "fine", Label: 1}, {Text: "bad", Label: 0}}
		if len(r.ds) != len(want) {
			t.Fatalf("got %v, want %v", r.ds, want)
		}
		for i := range want {
			if !reflect.DeepEqual(r.ds[i], want[i]) {
				t.Errorf("example %d = %+v, want %+v", i, r.ds[i], want[i])
			}
		}
	case <-time.After(10 * time.Second):
		// Release the blocked reader: opening a pipe read-write never waits.
		for _, p := range []string{pos, neg} {
			if f, err := os.OpenFile(p, os.O_RDWR, 0); err == nil {
				f.Close()
			}
		}
		t.Fatal("LoadPolarity on named pipes did not return in 10s: it opens a file more than once")
	}
}
