package launch

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
)

// terminal serialises the lines that several ranks write to one stream of the launcher. Once
// a write fails (the reader of a pipe went away, as `| head` does) it stops copying: the
// ranks' output is still in their log files, and the launcher goes on supervising them.
type terminal struct {
	mu     sync.Mutex
	w      io.Writer
	broken bool
}

// prefixWriter writes each complete line to a terminal with a prefix ("[rank 3] "); a last
// line without newline is written on close.
type prefixWriter struct {
	t      *terminal
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		p.emit(p.buf[:i+1])
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

func (p *prefixWriter) emit(line []byte) {
	p.t.mu.Lock()
	defer p.t.mu.Unlock()
	if p.t.broken {
		return
	}
	if _, err := p.t.w.Write(append([]byte(p.prefix), line...)); err != nil {
		p.t.broken = true
	}
}

// flush writes what is left of a last line that had no newline.
func (p *prefixWriter) flush() {
	if len(p.buf) > 0 {
		p.emit(append(p.buf, '\n'))
		p.buf = nil
	}
}

// tail returns the last n lines of a file ("" when it cannot be read), for failure reports.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	const most = 16 << 10
	off := max(0, st.Size()-most)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	return strings.Join(lines, "\n")
}
