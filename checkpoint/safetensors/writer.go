package safetensors

import (
	"fmt"
	"io"

	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/gomlx/gomlx/core/tensors"
)

// Named is a tensor with the name it has (or will have) in a file.
type Named struct {
	Name   string
	Tensor *tensors.Tensor
}

// Layout checks the tensors and returns their header entries, laid out contiguously in the given
// order, and the total data size. Names must be unique, non-empty and not "__metadata__".
func Layout(ts []Named) ([]TensorInfo, int64, error) {
	infos := make([]TensorInfo, len(ts))
	seen := make(map[string]bool, len(ts))
	var offset int64
	for i, nt := range ts {
		switch {
		case nt.Name == "":
			return nil, 0, fmt.Errorf("safetensors: tensor #%d has an empty name", i)
		case nt.Name == MetadataKey:
			return nil, 0, fmt.Errorf("safetensors: tensor #%d uses the reserved name %q", i, MetadataKey)
		case seen[nt.Name]:
			return nil, 0, fmt.Errorf("safetensors: tensor name %q used twice", nt.Name)
		case nt.Tensor == nil:
			return nil, 0, fmt.Errorf("safetensors: tensor %q is nil", nt.Name)
		}
		seen[nt.Name] = true
		shape := nt.Tensor.Shape()
		if _, err := DTypeName(shape.DType); err != nil {
			return nil, 0, fmt.Errorf("%w (tensor %q)", err, nt.Name)
		}
		size := int64(shape.ByteSize())
		infos[i] = TensorInfo{Name: nt.Name, DType: shape.DType, Dims: shape.Dimensions,
			Begin: offset, End: offset + size}
		offset += size
	}
	return infos, offset, nil
}

// Write writes the tensors, in the given order, and the metadata (may be nil) to w in the
// safetensors format. It returns the number of bytes written.
func Write(w io.Writer, ts []Named, metadata map[string]string) (int64, error) {
	if err := checkHost(); err != nil {
		return 0, err
	}
	infos, _, err := Layout(ts)
	if err != nil {
		return 0, err
	}
	header, err := encodeHeader(infos, metadata)
	if err != nil {
		return 0, err
	}
	n, err := w.Write(header)
	total := int64(n)
	if err != nil {
		return total, fmt.Errorf("safetensors: writing header: %w", err)
	}
	for _, nt := range ts {
		var werr error
		err := nt.Tensor.ConstBytes(func(data []byte) {
			n, werr = w.Write(data)
			total += int64(n)
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			return total, fmt.Errorf("safetensors: writing tensor %q: %w", nt.Name, err)
		}
	}
	return total, nil
}

// WriteFile writes the tensors to the named file (created with mode 0644 before umask, or
// truncated) and syncs it to stable storage before closing. It is not atomic: a crash can leave
// a partial file (the checkpoint package writes into a temporary directory for that reason).
func WriteFile(path string, ts []Named, metadata map[string]string) error {
	err := fsutil.WriteSync(path, func(w io.Writer) error {
		_, err := Write(w, ts, metadata)
		return err
	})
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}
