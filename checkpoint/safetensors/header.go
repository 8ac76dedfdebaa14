package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"unsafe"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
)

// MetadataKey is the reserved header entry that holds the free-form string metadata.
const MetadataKey = "__metadata__"

// MaxHeaderSize bounds the JSON header a reader accepts (100 MB, as the reference implementation),
// so a damaged length field cannot make a reader allocate gigabytes.
const MaxHeaderSize = 100 << 20

// hostIsLittleEndian reports whether the machine stores numbers little-endian, as the format does.
// The package reads and writes the host's memory as is, so it refuses to work on big-endian hosts.
var hostIsLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// checkHost returns an error on big-endian hosts.
func checkHost() error {
	if !hostIsLittleEndian {
		return errors.New("safetensors: big-endian hosts are not supported")
	}
	return nil
}

// TensorInfo describes one tensor of a file, as given by the header.
type TensorInfo struct {
	// Name is the tensor's key in the header.
	Name string
	// DType is the element type.
	DType dtypes.DType
	// Dims are the dimensions; empty for a scalar.
	Dims []int
	// Begin and End delimit the tensor's bytes, counted from the start of the data section.
	Begin, End int64
}

// Shape returns the GoMLX shape of the tensor.
func (ti TensorInfo) Shape() shapes.Shape {
	return shapes.Make(ti.DType, ti.Dims...)
}

// Header is the parsed header of a safetensors file.
type Header struct {
	// Tensors are sorted by their position in the data section.
	Tensors []TensorInfo
	// Metadata holds the "__metadata__" entry (nil if absent).
	Metadata map[string]string
	// DataOffset is the file offset of the data section (8 + header length).
	DataOffset int64
	// DataSize is the number of data bytes the tensors span (the largest End).
	DataSize int64
}

// Lookup returns the description of the tensor with the given name.
func (h *Header) Lookup(name string) (TensorInfo, bool) {
	for _, ti := range h.Tensors {
		if ti.Name == name {
			return ti, true
		}
	}
	return TensorInfo{}, false
}

// rawEntry is the JSON form of one tensor entry.
type rawEntry struct {
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// ReadHeader reads and validates the length prefix and JSON header from r, leaving r positioned at
// the start of the data section.
func ReadHeader(r io.Reader) (*Header, error) {
	return readHeader(r, MaxHeaderSize)
}

// readHeader is ReadHeader with a bound on the header length: MaxHeaderSize, or less when the
// size of the file is known.
func readHeader(r io.Reader, maxLen uint64) (*Header, error) {
	var prefix [8]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, fmt.Errorf("safetensors: reading header length: %w", noEOF(err))
	}
	n := binary.LittleEndian.Uint64(prefix[:])
	if n == 0 || n > maxLen {
		return nil, fmt.Errorf("safetensors: header length %d out of range (1..%d): not a safetensors file, or damaged", n, maxLen)
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, fmt.Errorf("safetensors: reading %d-byte header: %w", n, noEOF(err))
	}
	h, err := parseHeader(raw)
	if err != nil {
		return nil, err
	}
	h.DataOffset = 8 + int64(n)
	return h, nil
}

// noEOF turns a bare io.EOF into io.ErrUnexpectedEOF: inside a file, an end is always premature.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseHeader decodes and validates the JSON header.
func parseHeader(raw []byte) (*Header, error) {
	var entries map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("safetensors: header is not a JSON object: %w", err)
	}
	if entries == nil {
		return nil, errors.New("safetensors: header is null")
	}
	h := &Header{Tensors: make([]TensorInfo, 0, len(entries))}
	for name, msg := range entries {
		if name == MetadataKey {
			if err := json.Unmarshal(msg, &h.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors: %s must map strings to strings: %w", MetadataKey, err)
			}
			continue
		}
		var e rawEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: bad header entry: %w", name, err)
		}
		ti, err := e.info(name)
		if err != nil {
			return nil, err
		}
		h.Tensors = append(h.Tensors, ti)
	}
	sort.Slice(h.Tensors, func(i, j int) bool {
		a, b := h.Tensors[i], h.Tensors[j]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		if a.End != b.End {
			return a.End < b.End
		}
		return a.Name < b.Name
	})
	var end int64
	for i, ti := range h.Tensors {
		if i > 0 && ti.Begin < end {
			return nil, fmt.Errorf("safetensors: tensor %q (bytes %d..%d) overlaps tensor %q (ends at %d)",
				ti.Name, ti.Begin, ti.End, h.Tensors[i-1].Name, end)
		}
		end = max(end, ti.End)
	}
	h.DataSize = end
	return h, nil
}

// info validates one header entry.
func (e rawEntry) info(name string) (TensorInfo, error) {
	dtype, err := ParseDType(e.DType)
	if err != nil {
		return TensorInfo{}, fmt.Errorf("%w (tensor %q)", err, name)
	}
	if e.Shape == nil {
		return TensorInfo{}, fmt.Errorf("safetensors: tensor %q: missing shape", name)
	}
	if len(e.DataOffsets) != 2 {
		return TensorInfo{}, fmt.Errorf("safetensors: tensor %q: data_offsets must have 2 values, got %v", name, e.DataOffsets)
	}
	ti := TensorInfo{Name: name, DType: dtype, Dims: make([]int, len(e.Shape)),
		Begin: e.DataOffsets[0], End: e.DataOffsets[1]}
	size := int64(dtype.Size())
	for i, d := range e.Shape {
		if d < 0 {
			return TensorInfo{}, fmt.Errorf("safetensors: tensor %q: invalid dimension %d in shape %v", name, d, e.Shape)
		}
		if d != 0 && size > math.MaxInt64/d {
			return TensorInfo{}, fmt.Errorf("safetensors: tensor %q: shape %v too large", name, e.Shape)
		}
		size *= d
		ti.Dims[i] = int(d)
	}
	if ti.Begin < 0 || ti.End < ti.Begin {
		return TensorInfo{}, fmt.Errorf("safetensors: tensor %q: invalid data_offsets %v", name, e.DataOffsets)
	}
	if ti.End-ti.Begin != size {
		return TensorInfo{}, fmt.Errorf("safetensors: tensor %q: data_offsets %v span %d bytes, but %s%v needs %d",
			name, e.DataOffsets, ti.End-ti.Begin, e.DType, e.Shape, size)
	}
	return ti, nil
}

// encodeHeader builds the length prefix plus the space-padded JSON header for the given tensors
// (laid out contiguously in the given order) and metadata.
func encodeHeader(infos []TensorInfo, metadata map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(make([]byte, 8)) // Length prefix, filled in at the end.
	buf.WriteByte('{')
	first := true
	writeKey := func(key string) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		k, _ := json.Marshal(key) // Marshaling a string cannot fail.
		buf.Write(k)
		buf.WriteByte(':')
	}
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		writeKey(MetadataKey)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			vb, _ := json.Marshal(metadata[k])
			buf.Write(kb)
			buf.WriteByte(':')
			buf.Write(vb)
		}
		buf.WriteByte('}')
	}
	for _, ti := range infos {
		name, err := DTypeName(ti.DType)
		if err != nil {
			return nil, fmt.Errorf("%w (tensor %q)", err, ti.Name)
		}
		writeKey(ti.Name)
		dims := ti.Dims
		if dims == nil {
			dims = []int{}
		}
		dimsJSON, _ := json.Marshal(dims)
		fmt.Fprintf(&buf, `{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, name, dimsJSON, ti.Begin, ti.End)
	}
	buf.WriteByte('}')
	for (buf.Len()-8)%8 != 0 {
		buf.WriteByte(' ')
	}
	out := buf.Bytes()
	if n := len(out) - 8; n > MaxHeaderSize {
		return nil, fmt.Errorf("safetensors: header of %d bytes exceeds the %d-byte limit", n, MaxHeaderSize)
	}
	binary.LittleEndian.PutUint64(out[:8], uint64(len(out)-8))
	return out, nil
}
