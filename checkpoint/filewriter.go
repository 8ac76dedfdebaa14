package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"sync"
	"unsafe"
)

// The staging buffers of fileWriter.
const (
	// stageSize is the size of one staging buffer: large writes, few system calls.
	stageSize = 8 << 20
	// stageCount buffers per file let the three stages (copy, hash, write) run at once.
	stageCount = 3
	// dioAlign is the alignment of buffers, offsets and sizes for O_DIRECT: 4096 suits the
	// devices and file systems in use (a stricter one is detected by EINVAL, see writeAt).
	dioAlign = 4096
)

// stagePool keeps staging buffers between files and saves: memory reused is already mapped,
// where fresh memory costs page faults (a lot of them in a virtual machine).
var stagePool = sync.Pool{New: func() any { return &stage{mem: alignedBytes(stageSize)} }}

// stage is one staging buffer and the number of bytes it holds.
type stage struct {
	mem []byte
	n   int
}

// alignedBytes returns size bytes whose address is a multiple of dioAlign.
func alignedBytes(size int) []byte {
	b := make([]byte, size+dioAlign)
	skip := (dioAlign - int(uintptr(unsafe.Pointer(&b[0]))%dioAlign)) % dioAlign
	return b[skip : skip+size : skip+size]
}

// fileWriter writes one checkpoint file and its SHA-256 in three overlapped stages: Write
// copies the bytes into a staging buffer, a goroutine hashes full buffers, another writes them
// at their offset and hands them back. Where the file system allows, the file is written with
// O_DIRECT from the aligned staging buffers: no page-cache pages to allocate and fill (on this
// project's virtual machines a page-cache page freed a few seconds earlier costs a fault in
// the host to use again, which made buffered writes 3-10x slower than the disk), and close to
// nothing left to flush at fsync. The tail that O_DIRECT cannot write (under dioAlign bytes) is
// written through the page cache. finish fsyncs and closes the file, like every other write
// of a checkpoint. A fileWriter is used by one goroutine.
type fileWriter struct {
	path   string
	f      *os.File
	direct bool // f has O_DIRECT; only the writing goroutine changes it once running.

	free    chan *stage // Empty buffers, back from the writing goroutine.
	toHash  chan *stage
	toWrite chan *stage
	done    chan struct{} // Closed when the writing goroutine has finished.
	cur     *stage        // The buffer Write is filling; nil if none.
	h       hash.Hash
	n       int64 // Bytes accepted by Write.

	mu  sync.Mutex
	err error // The first write error.
}

// newFileWriter creates (or truncates) the file at path.
func newFileWriter(path string) (*fileWriter, error) {
	f, direct, err := openWrite(path)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	fw := &fileWriter{path: path, f: f, direct: direct, h: sha256.New(),
		free: make(chan *stage, stageCount), toHash: make(chan *stage, stageCount),
		toWrite: make(chan *stage, stageCount), done: make(chan struct{})}
	for range stageCount {
		fw.free <- stagePool.Get().(*stage)
	}
	go func() {
		for s := range fw.toHash {
			fw.h.Write(s.mem[:s.n])
			fw.toWrite <- s
		}
		close(fw.toWrite)
	}()
	go func() {
		var off int64
		for s := range fw.toWrite {
			if fw.failed() == nil {
				if err := fw.writeAt(s.mem[:s.n], off); err != nil {
					fw.fail(err)
				}
			}
			off += int64(s.n)
			s.n = 0
			fw.free <- s
		}
		close(fw.done)
	}()
	return fw, nil
}

func (fw *fileWriter) failed() error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.err
}

func (fw *fileWriter) fail(err error) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.err == nil {
		fw.err = err
	}
}

// Write implements io.Writer. It copies p; p may change once Write returns.
func (fw *fileWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if err := fw.failed(); err != nil {
			return written, fmt.Errorf("writing %s: %w", fw.path, err)
		}
		if fw.cur == nil {
			fw.cur = <-fw.free
		}
		c := copy(fw.cur.mem[fw.cur.n:], p)
		fw.cur.n += c
		fw.n += int64(c)
		written += c
		p = p[c:]
		if fw.cur.n == len(fw.cur.mem) {
			fw.toHash <- fw.cur
			fw.cur = nil
		}
	}
	return written, nil
}

// writeAt writes b at off: directly while b and off allow it, else through the page cache.
// Run by the writing goroutine only.
func (fw *fileWriter) writeAt(b []byte, off int64) error {
	for len(b) > 0 {
		chunk := b
		if fw.direct {
			if k := len(b) &^ (dioAlign - 1); k > 0 {
				chunk = b[:k]
			} else if err := fw.buffered(); err != nil {
				return err
			}
		}
		n, err := fw.f.WriteAt(chunk, off)
		b, off = b[n:], off+int64(n)
		if err != nil {
			if fw.direct && isAlignErr(err) {
				// The device wants a stricter alignment than dioAlign: go on through the cache.
				if berr := fw.buffered(); berr != nil {
					return err
				}
				continue
			}
			return err
		}
	}
	return nil
}

// buffered turns O_DIRECT off for the rest of the file.
func (fw *fileWriter) buffered() error {
	if err := setBuffered(fw.f); err != nil {
		return fmt.Errorf("turning O_DIRECT off: %w", err)
	}
	fw.direct = false
	return nil
}

// finish writes what is left, waits for the writes, fsyncs and closes the file, and returns
// its manifest entry. It must be called once, even after a failed Write (it then only cleans
// up and returns the error).
func (fw *fileWriter) finish() (fileEntry, error) {
	if fw.cur != nil {
		if fw.cur.n > 0 {
			fw.toHash <- fw.cur
		} else {
			fw.free <- fw.cur
		}
		fw.cur = nil
	}
	close(fw.toHash)
	<-fw.done
	for range stageCount {
		stagePool.Put(<-fw.free)
	}
	err := fw.failed()
	if err == nil {
		err = fw.f.Sync()
	}
	if cerr := fw.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fileEntry{}, fmt.Errorf("writing %s: %w", fw.path, err)
	}
	return fileEntry{Size: fw.n, SHA256: hex.EncodeToString(fw.h.Sum(nil))}, nil
}
