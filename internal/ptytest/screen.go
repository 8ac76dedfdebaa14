package ptytest

import (
	"bytes"
	"os"
	"time"
)

// Screen collects what is written to a pseudo-terminal's slave side, reading its master side
// in the background.
type Screen struct {
	buf  bytes.Buffer
	done chan struct{}
}

// Capture starts reading master. Call Text once the writer has closed the slave side.
func Capture(master *os.File) *Screen {
	s := &Screen{done: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			s.buf.Write(buf[:n])
			if err != nil {
				close(s.done)
				return
			}
		}
	}()
	return s
}

// Text waits (at most 5 s) for the reading to end and returns everything read.
func (s *Screen) Text() string {
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
	}
	return s.buf.String()
}
