package bert

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/gomlx/compute/dtypes/float16"
)

// A minimal reader and writer of the safetensors format (what HF's model.safetensors uses):
//
//	8 bytes   little-endian uint64 N, the size of the header
//	N bytes   JSON header: {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//	          "__metadata__": {"format": "pt"}}  (offsets relative to the end of the header)
//	...       the tensors' bytes, little-endian, row-major
//
// go-huggingface's safetensors package reads this format too, but only through a hub.Repo
// (HF cache layout with downloads); a model folder on disk needs none of that.

// maxHeaderSize bounds the JSON header, to reject garbage before allocating it.
const maxHeaderSize = 100 << 20

// stEntry is one tensor of a safetensors header.
type stEntry struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// stFile is an open safetensors file with its parsed header.
type stFile struct {
	path      string
	f         *os.File
	dataStart int64
	entries   map[string]stEntry
}

// stElementSize returns the byte size of a safetensors dtype (0 if unknown).
func stElementSize(dtype string) int {
	switch dtype {
	case "F64", "I64", "U64":
		return 8
	case "F32", "I32", "U32":
		return 4
	case "F16", "BF16", "I16", "U16":
		return 2
	case "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2":
		return 1
	}
	return 0
}

// openSafetensors opens path and parses and validates its header: every tensor's byte range
// must match its shape and dtype and lie inside the file.
func openSafetensors(path string) (*stFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bert: opening weights: %w", err)
	}
	st, err := parseSafetensorsHeader(f, path)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return st, nil
}

// parseSafetensorsHeader reads the header of an open safetensors file.
func parseSafetensorsHeader(f *os.File, path string) (*stFile, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("bert: %s: %w", path, err)
	}
	var sizeBuf [8]byte
	if _, err := io.ReadFull(f, sizeBuf[:]); err != nil {
		return nil, fmt.Errorf("bert: %s is not a safetensors file (no header size): %w", path, err)
	}
	headerSize := binary.LittleEndian.Uint64(sizeBuf[:])
	if headerSize == 0 || headerSize > maxHeaderSize || int64(headerSize)+8 > info.Size() {
		return nil, fmt.Errorf("bert: %s is not a safetensors file (header size %d, file size %d)",
			path, headerSize, info.Size())
	}
	header := make([]byte, headerSize)
	if _, err := io.ReadFull(f, header); err != nil {
		return nil, fmt.Errorf("bert: %s: reading safetensors header: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, fmt.Errorf("bert: %s: safetensors header is not valid JSON: %w", path, err)
	}
	st := &stFile{path: path, f: f, dataStart: 8 + int64(headerSize), entries: make(map[string]stEntry, len(raw))}
	dataSize := info.Size() - st.dataStart
	for name, msg := range raw {
		if name == "__metadata__" {
			continue
		}
		var e stEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("bert: %s: tensor %q: bad header entry: %w", path, name, err)
		}
		elemSize := stElementSize(e.DType)
		if elemSize == 0 {
			return nil, fmt.Errorf("bert: %s: tensor %q has unknown dtype %q", path, name, e.DType)
		}
		numel := int64(1)
		for _, d := range e.Shape {
			if d < 0 {
				return nil, fmt.Errorf("bert: %s: tensor %q has negative dimension in shape %v", path, name, e.Shape)
			}
			numel *= int64(d)
		}
		begin, end := e.Offsets[0], e.Offsets[1]
		if begin < 0 || end < begin || end > dataSize || end-begin != numel*int64(elemSize) {
			return nil, fmt.Errorf("bert: %s: tensor %q (%s %v) has byte range [%d, %d) that does not fit its shape or the file (%d data bytes)",
				path, name, e.DType, e.Shape, begin, end, dataSize)
		}
		st.entries[name] = e
	}
	return st, nil
}

// Close closes the file.
func (st *stFile) Close() error { return st.f.Close() }

// readFloat32 reads tensor name, converting F32, F16, BF16 and F64 values to float32.
func (st *stFile) readFloat32(name string) ([]float32, error) {
	e, ok := st.entries[name]
	if !ok {
		return nil, fmt.Errorf("bert: %s has no tensor %q", st.path, name)
	}
	raw := make([]byte, e.Offsets[1]-e.Offsets[0])
	if _, err := st.f.ReadAt(raw, st.dataStart+e.Offsets[0]); err != nil {
		return nil, fmt.Errorf("bert: %s: reading tensor %q: %w", st.path, name, err)
	}
	elemSize := stElementSize(e.DType)
	out := make([]float32, len(raw)/elemSize)
	switch e.DType {
	case "F32":
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case "F16":
		for i := range out {
			out[i] = float16.FromBits(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
		}
	case "BF16":
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
	case "F64":
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:])))
		}
	default:
		return nil, fmt.Errorf("bert: %s: tensor %q has dtype %s, want a float type (F32, F16, BF16, F64)",
			st.path, name, e.DType)
	}
	return out, nil
}

// stTensor is a tensor to write: float32 values stored with the given safetensors dtype
// (F32, F16 or BF16; BF16 is rounded to nearest even).
type stTensor struct {
	Name  string
	DType string
	Shape []int
	Data  []float32
}

// writeSafetensors writes tensors to path (atomically), with the given metadata.
func writeSafetensors(path string, tensorList []stTensor, metadata map[string]string) error {
	sorted := make([]stTensor, len(tensorList))
	copy(sorted, tensorList)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	header := make(map[string]any, len(sorted)+1)
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var body bytes.Buffer
	for _, t := range sorted {
		numel := 1
		for _, d := range t.Shape {
			numel *= d
		}
		if numel != len(t.Data) {
			return fmt.Errorf("bert: writing %s: tensor %q has shape %v but %d values", path, t.Name, t.Shape, len(t.Data))
		}
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("bert: writing %s: duplicate tensor %q", path, t.Name)
		}
		begin := int64(body.Len())
		var buf [4]byte
		for _, v := range t.Data {
			switch t.DType {
			case "F32":
				binary.LittleEndian.PutUint32(buf[:], math.Float32bits(v))
				body.Write(buf[:4])
			case "F16":
				binary.LittleEndian.PutUint16(buf[:], float16.FromFloat32(v).Bits())
				body.Write(buf[:2])
			case "BF16":
				binary.LittleEndian.PutUint16(buf[:], float32ToBF16Bits(v))
				body.Write(buf[:2])
			default:
				return fmt.Errorf("bert: writing %s: tensor %q: unsupported dtype %q", path, t.Name, t.DType)
			}
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = stEntry{DType: t.DType, Shape: shape, Offsets: [2]int64{begin, int64(body.Len())}}
	}
	headerJSON, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("bert: writing %s: %w", path, err)
	}
	// Pad the header with spaces so the data starts 8-byte aligned, as the HF writer does.
	for (8+len(headerJSON))%8 != 0 {
		headerJSON = append(headerJSON, ' ')
	}
	out := make([]byte, 8, 8+len(headerJSON)+body.Len())
	binary.LittleEndian.PutUint64(out, uint64(len(headerJSON)))
	out = append(out, headerJSON...)
	out = append(out, body.Bytes()...)
	return writeFileAtomic(path, out)
}

// float32ToBF16Bits rounds a float32 to bfloat16 (round to nearest even; NaN kept NaN).
func float32ToBF16Bits(v float32) uint16 {
	bits := math.Float32bits(v)
	if v != v {
		return uint16(bits>>16) | 0x40
	}
	rounding := uint32(0x7FFF) + (bits>>16)&1
	return uint16((bits + rounding) >> 16)
}
