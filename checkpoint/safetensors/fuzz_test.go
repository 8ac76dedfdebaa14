package safetensors

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

// FuzzHeader: whatever a safetensors file holds, ReadHeader, NewReader's tensors and Open
// give tensors inside the data or an error (Open's naming the file); they never panic. The
// seeds are a file the writer makes and the header of the ModernBERT fixture.
func FuzzHeader(f *testing.F) {
	var buf bytes.Buffer
	ts := []Named{{"a", tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4, 5, 6}, 2, 3)},
		{"b", tensors.FromFlatDataAndDimensions([]int32{7}, 1)}}
	if _, err := Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	if raw, err := os.ReadFile(filepath.Join("..", "..", "models", "modernbert", "testdata", "tiny", "model.safetensors")); err == nil && len(raw) > 8 {
		n := binary.LittleEndian.Uint64(raw[:8])
		if n < uint64(len(raw))-8 {
			f.Add(raw[:8+n+16]) // the header and the first bytes of the data: truncated tensors
		}
	}
	f.Add([]byte("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":{}}        "))
	f.Add([]byte("\x40\x00\x00\x00\x00\x00\x00\x00{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}    "))
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if h, err := ReadHeader(bytes.NewReader(raw)); err == nil {
			for _, ti := range h.Tensors {
				for _, d := range ti.Dims {
					if d < 0 {
						t.Errorf("tensor %s: dims %v", ti.Name, ti.Dims)
					}
				}
			}
		}
		if r, err := NewReader(bytes.NewReader(raw)); err == nil {
			for range len(r.Header().Tensors) + 1 {
				if _, _, err := r.Next(); err != nil {
					break // io.EOF, or data that ends early
				}
			}
		}
		path := filepath.Join(t.TempDir(), "fuzz.safetensors")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := Open(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Errorf("Open error %v does not name %s", err, path)
			}
			return
		}
		defer file.Close()
		for _, ti := range file.Header().Tensors {
			if _, err := file.Read(ti.Name); err != nil && !strings.Contains(err.Error(), path) {
				t.Errorf("Read(%s) error %v does not name %s", ti.Name, err, path)
			}
		}
	})
}
