package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestFileWriter writes files of sizes around the alignment and staging-buffer boundaries, in
// writes of random sizes, and checks the bytes on disk and the size and SHA-256 it reports:
// O_DIRECT writes for the aligned part, the page cache for the tail.
func TestFileWriter(t *testing.T) {
	dirs := []string{t.TempDir()}
	if info, err := os.Stat("/dev/shm"); err == nil && info.IsDir() { // tmpfs: O_DIRECT may be refused.
		d, err := os.MkdirTemp("/dev/shm", "filewriter-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			dirs = append(dirs, d)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, dioAlign - 1, dioAlign, dioAlign + 1, stageSize - 1, stageSize, stageSize + 1,
		2*stageSize + 12345, 5*stageSize + dioAlign}
	for _, dir := range dirs {
		for _, size := range sizes {
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			path := filepath.Join(dir, "f.bin")
			fw, err := newFileWriter(path)
			if err != nil {
				t.Fatal(err)
			}
			direct := fw.direct
			for rest := data; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(3*stageSize/2))
				if _, err := fw.Write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
			fe, err := fw.finish()
			if err != nil {
				t.Fatalf("%s, %d bytes: %v", dir, size, err)
			}
			sum := sha256.Sum256(data)
			if fe.Size != int64(size) || fe.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("%s, %d bytes: entry %+v, want size %d and SHA-256 %x", dir, size, fe, size, sum)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Errorf("%s, %d bytes (O_DIRECT %v): the file holds %d bytes that differ", dir, size, direct, len(got))
			}
			if size == sizes[len(sizes)-1] {
				t.Logf("%s: O_DIRECT %v", dir, direct)
			}
		}
	}
}

// TestFileWriterError: a write that fails (here: the file was opened read-only under the
// writer's feet) is returned by Write or finish, never lost, and the writer still cleans up.
func TestFileWriterError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.bin")
	fw, err := newFileWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fw.f.Close()
	fw.f = ro
	data := make([]byte, 3*stageSize)
	_, werr := fw.Write(data)
	_, ferr := fw.finish()
	if werr == nil && ferr == nil {
		t.Fatal("writing to a read-only file reported no error")
	}
	if ferr == nil {
		t.Errorf("finish after the failed write returned no error (Write said %v)", werr)
	}
}
