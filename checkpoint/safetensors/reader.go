package safetensors

import (
	"fmt"
	"io"
	"os"

	"github.com/gomlx/gomlx/core/tensors"
)

// Reader reads the tensors of a safetensors stream one at a time, in file order.
type Reader struct {
	r      io.Reader
	header *Header
	pos    int64 // Position in the data section.
	next   int   // Index of the next tensor in header.Tensors.
}

// NewReader reads the header from r and returns a Reader positioned at the first tensor.
func NewReader(r io.Reader) (*Reader, error) {
	if err := checkHost(); err != nil {
		return nil, err
	}
	h, err := ReadHeader(r)
	if err != nil {
		return nil, err
	}
	return &Reader{r: r, header: h}, nil
}

// Header returns the parsed header.
func (r *Reader) Header() *Header { return r.header }

// Next reads the next tensor into a new host tensor. It returns io.EOF after the last one, and
// io.ErrUnexpectedEOF (wrapped, naming the tensor) if the data ends early.
func (r *Reader) Next() (TensorInfo, *tensors.Tensor, error) {
	if r.next >= len(r.header.Tensors) {
		return TensorInfo{}, nil, io.EOF
	}
	ti := r.header.Tensors[r.next]
	r.next++
	if gap := ti.Begin - r.pos; gap > 0 {
		n, err := io.CopyN(io.Discard, r.r, gap)
		r.pos += n
		if err != nil {
			return ti, nil, fmt.Errorf("safetensors: tensor %q: skipping to offset %d: %w", ti.Name, ti.Begin, noEOF(err))
		}
	}
	t := tensors.FromShape(ti.Shape())
	var n int
	var rerr error
	err := t.MutableBytes(func(data []byte) {
		n, rerr = io.ReadFull(r.r, data)
	})
	r.pos += int64(n)
	if err == nil {
		err = rerr
	}
	if err != nil {
		t.FinalizeAll()
		return ti, nil, fmt.Errorf("safetensors: tensor %q: reading %d bytes at data offset %d: %w", ti.Name, ti.End-ti.Begin, ti.Begin, noEOF(err))
	}
	return ti, t, nil
}

// ReadFile reads all tensors and the metadata of a safetensors file. The tensors come in file order.
func ReadFile(path string) ([]Named, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (file %s)", err, path)
	}
	var out []Named
	for {
		ti, t, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			for _, nt := range out {
				nt.Tensor.FinalizeAll()
			}
			return nil, nil, fmt.Errorf("%w (file %s)", err, path)
		}
		out = append(out, Named{Name: ti.Name, Tensor: t})
	}
	return out, r.header.Metadata, nil
}
