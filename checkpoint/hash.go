package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"sync"
)

// hashChunk is the unit handed to the hashing goroutine: while one chunk is hashed, the next one
// is written or read, so hashing costs little on top of the I/O.
const hashChunk = 8 << 20

// pipeHash computes a SHA-256 on a separate goroutine, over byte slices submitted in order.
type pipeHash struct {
	h    hash.Hash
	ch   chan []byte
	done chan struct{}
	wg   sync.WaitGroup
	n    int64
}

func newPipeHash() *pipeHash {
	p := &pipeHash{h: sha256.New(), ch: make(chan []byte, 2), done: make(chan struct{})}
	go func() {
		for b := range p.ch {
			p.h.Write(b)
			p.wg.Done()
		}
		close(p.done)
	}()
	return p
}

// submit queues b for hashing; b must not change until wait returns.
func (p *pipeHash) submit(b []byte) {
	p.n += int64(len(b))
	p.wg.Add(1)
	p.ch <- b
}

// wait blocks until every submitted slice is hashed.
func (p *pipeHash) wait() { p.wg.Wait() }

// sum stops the hashing goroutine and returns the hex digest and the byte count.
func (p *pipeHash) sum() (string, int64) {
	close(p.ch)
	<-p.done
	return hex.EncodeToString(p.h.Sum(nil)), p.n
}

// close stops the hashing goroutine, discarding the result.
func (p *pipeHash) close() { p.sum() }

// hashWriter writes to w and hashes what it writes.
type hashWriter struct {
	w io.Writer
	p *pipeHash
}

// Write implements io.Writer; p is hashed in chunks, concurrently with the writing.
func (hw *hashWriter) Write(b []byte) (int, error) {
	written := 0
	defer hw.p.wait()
	for len(b) > 0 {
		c := b[:min(len(b), hashChunk)]
		n, err := hw.w.Write(c)
		hw.p.submit(c[:n])
		written += n
		if err != nil {
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

// hashReader reads from r and hashes what it reads.
type hashReader struct {
	r io.Reader
	p *pipeHash
}

// Read implements io.Reader; it fills b chunk by chunk, hashing each chunk while reading the
// next, and returns once the hash has caught up.
func (hr *hashReader) Read(b []byte) (int, error) {
	read := 0
	defer hr.p.wait()
	for read < len(b) {
		c := b[read:min(len(b), read+hashChunk)]
		n, err := hr.r.Read(c)
		if n > 0 {
			hr.p.submit(c[:n])
			read += n
		}
		if err != nil {
			return read, err
		}
		if n < len(c) {
			break // Short read: return what we have, as io.Reader allows.
		}
	}
	return read, nil
}
