package safetensors

import (
	"fmt"
	"os"

	"github.com/gomlx/gomlx/core/tensors"
)

// File is a safetensors file open for random access: Open parses and checks its header, and
// Read loads the tensors asked for, one at a time and in any order, so that a caller holds in
// memory only the tensors it keeps. Use NewReader instead to stream every tensor in file order
// from any io.Reader.
type File struct {
	path   string
	f      *os.File
	header *Header
	byName map[string]int // Index in header.Tensors.
}

// Open opens the safetensors file at path and reads its header. Besides what ReadHeader checks,
// every tensor must lie inside the file: a truncated file is an error here, naming the first
// tensor it cuts. Errors name the file. Close the File when done.
func Open(path string) (*File, error) {
	if err := checkHost(); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	file, err := newFile(path, f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return file, nil
}

// newFile reads and checks the header of the open file f.
func newFile(path string, f *os.File) (*File, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	size := info.Size()
	maxLen := uint64(MaxHeaderSize)
	if size < 8 {
		maxLen = 0 // readHeader reports the short length prefix.
	} else if avail := uint64(size - 8); avail < maxLen {
		maxLen = avail
	}
	h, err := readHeader(f, maxLen)
	if err != nil {
		return nil, err
	}
	if dataSize := size - h.DataOffset; h.DataSize > dataSize {
		for _, ti := range h.Tensors {
			if ti.End > dataSize {
				return nil, fmt.Errorf("safetensors: tensor %q (%s%v, data bytes %d..%d) does not fit in the file's %d data bytes: truncated or damaged",
					ti.Name, dtypeNames[ti.DType], ti.Dims, ti.Begin, ti.End, dataSize)
			}
		}
	}
	file := &File{path: path, f: f, header: h, byName: make(map[string]int, len(h.Tensors))}
	for i, ti := range h.Tensors {
		file.byName[ti.Name] = i
	}
	return file, nil
}

// Path returns the path the File was opened with.
func (f *File) Path() string { return f.path }

// Header returns the parsed header; its Tensors are in file order.
func (f *File) Header() *Header { return f.header }

// Lookup returns the description of the tensor with the given name.
func (f *File) Lookup(name string) (TensorInfo, bool) {
	i, ok := f.byName[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.header.Tensors[i], true
}

// Read reads the named tensor into a new host tensor, with the dtype and shape of the file
// (see ConvertFloat to change the precision). Errors name the file and the tensor.
func (f *File) Read(name string) (*tensors.Tensor, error) {
	ti, ok := f.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("safetensors: %s has no tensor %q", f.path, name)
	}
	t := tensors.FromShape(ti.Shape())
	var rerr error
	err := t.MutableBytes(func(data []byte) {
		_, rerr = f.f.ReadAt(data, f.header.DataOffset+ti.Begin)
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		t.FinalizeAll()
		return nil, fmt.Errorf("safetensors: %s: tensor %q: reading %d bytes at data offset %d: %w", f.path, name, ti.End-ti.Begin, ti.Begin, noEOF(err))
	}
	return t, nil
}

// Close closes the file.
func (f *File) Close() error {
	if err := f.f.Close(); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}
