package safetensors

import (
	"bytes"
	"encoding/binary"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
)

// sampleTensors returns one tensor of every supported dtype, plus a scalar and an empty tensor.
func sampleTensors() []Named {
	return []Named{
		{"f32", tensors.FromValue([][]float32{{1.5, -2}, {3, 4.25}, {0, 1e-30}})},
		{"f64", tensors.FromValue([]float64{1e300, -0.5})},
		{"bf16", tensors.FromValue([]bfloat16.BFloat16{bfloat16.FromFloat32(1.5), bfloat16.FromFloat32(-3)})},
		{"f16", tensors.FromValue([]float16.Float16{float16.FromFloat32(0.25), float16.FromFloat32(-7)})},
		{"i32", tensors.FromValue([]int32{-1, 2, 1 << 30})},
		{"i64", tensors.FromScalar(int64(-1) << 40)},
		{"u8", tensors.FromValue([][]uint8{{0, 255}})},
		{"bool", tensors.FromValue([]bool{true, false, true})},
		{"i8", tensors.FromValue([]int8{-128, 127})},
		{"i16", tensors.FromValue([]int16{-300})},
		{"u16", tensors.FromValue([]uint16{65535})},
		{"u32", tensors.FromValue([]uint32{1 << 31})},
		{"u64", tensors.FromValue([]uint64{1 << 63})},
		{"empty", tensors.FromShape(shapes.Make(dtypes.Float32, 0, 3))},
	}
}

func TestRoundTrip(t *testing.T) {
	in := sampleTensors()
	var buf bytes.Buffer
	meta := map[string]string{"format": "pt", "note": `quote " and \ backslash`}
	n, err := Write(&buf, in, meta)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("Write returned %d bytes, buffer has %d", n, buf.Len())
	}
	headerLen := binary.LittleEndian.Uint64(buf.Bytes()[:8])
	if headerLen%8 != 0 {
		t.Errorf("header length %d is not a multiple of 8", headerLen)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Header().Metadata; got["format"] != "pt" || got["note"] != meta["note"] {
		t.Errorf("metadata = %v, want %v", got, meta)
	}
	if r.Header().DataOffset != int64(8+headerLen) {
		t.Errorf("DataOffset = %d, want %d", r.Header().DataOffset, 8+headerLen)
	}
	byName := map[string]*tensors.Tensor{}
	for _, nt := range in {
		byName[nt.Name] = nt.Tensor
	}
	count := 0
	for {
		ti, got, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		count++
		want := byName[ti.Name]
		if want == nil {
			t.Fatalf("unexpected tensor %q", ti.Name)
		}
		if !got.Shape().Equal(want.Shape()) {
			t.Errorf("%s: shape %s, want %s", ti.Name, got.Shape(), want.Shape())
		}
		if !got.Equal(want) {
			t.Errorf("%s: value %v, want %v", ti.Name, got, want)
		}
	}
	if count != len(in) {
		t.Errorf("read %d tensors, want %d", count, len(in))
	}
}

func TestWriteFileReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	in := sampleTensors()[:3]
	if err := WriteFile(path, in, nil); err != nil {
		t.Fatal(err)
	}
	out, meta, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta != nil {
		t.Errorf("metadata = %v, want nil", meta)
	}
	if len(out) != 3 {
		t.Fatalf("got %d tensors", len(out))
	}
	for i := range in {
		if out[i].Name != in[i].Name || !out[i].Tensor.Equal(in[i].Tensor) {
			t.Errorf("tensor %d: got %s=%v, want %s=%v", i, out[i].Name, out[i].Tensor, in[i].Name, in[i].Tensor)
		}
	}
}

// rawFile builds a safetensors stream from a literal header and data.
func rawFile(header string, data []byte) []byte {
	out := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(out, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

func TestReadOutOfOrderWithGap(t *testing.T) {
	// "b" comes first in the data, there is a 4-byte gap, then "a".
	data := []byte{1, 0, 0, 0, 9, 9, 9, 9, 2, 0, 0, 0, 3, 0, 0, 0}
	f := rawFile(`{"a":{"dtype":"I32","shape":[2],"data_offsets":[8,16]},"b":{"dtype":"I32","shape":[],"data_offsets":[0,4]}}`, data)
	r, err := NewReader(bytes.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	ti, b, err := r.Next()
	if err != nil || ti.Name != "b" || tensors.ToScalar[int32](b) != 1 {
		t.Fatalf("first tensor: %v %v %v", ti, b, err)
	}
	ti, a, err := r.Next()
	if err != nil || ti.Name != "a" || !a.Equal(tensors.FromValue([]int32{2, 3})) {
		t.Fatalf("second tensor: %v %v %v", ti, a, err)
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("want io.EOF, got %v", err)
	}
}

func TestMalformed(t *testing.T) {
	good := `{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	tests := []struct {
		name string
		file []byte
		want string // substring of the error
	}{
		{"empty file", nil, "header length"},
		{"zero header", rawFile("", nil), "out of range"},
		{"huge header length", func() []byte {
			b := make([]byte, 8)
			binary.LittleEndian.PutUint64(b, 1<<40)
			return b
		}(), "out of range"},
		{"header truncated", rawFile(good, nil)[:20], "reading"},
		{"not json", rawFile("[1,2]", nil), "not a JSON object"},
		{"unknown dtype", rawFile(`{"w":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)), `"C64"`},
		{"offsets mismatch", rawFile(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8)), "needs 12"},
		{"negative dim", rawFile(`{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, nil), "invalid dimension"},
		{"bad offsets", rawFile(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[4]}}`, nil), "2 values"},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "overlaps"},
		{"bad metadata", rawFile(`{"__metadata__":{"a":1}}`, nil), "__metadata__"},
		{"data truncated", rawFile(good, make([]byte, 5)), `tensor "w"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tc.file))
			if err == nil {
				for err == nil {
					_, _, err = r.Next()
				}
				if err == io.EOF {
					err = nil
				}
			}
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestWriteRejects(t *testing.T) {
	x := tensors.FromValue([]float32{1})
	tests := []struct {
		name string
		ts   []Named
		want string
	}{
		{"duplicate", []Named{{"a", x}, {"a", x}}, "used twice"},
		{"empty name", []Named{{"", x}}, "empty name"},
		{"reserved", []Named{{MetadataKey, x}}, "reserved"},
		{"nil", []Named{{"a", nil}}, "nil"},
		{"complex", []Named{{"c", tensors.FromValue([]complex64{1})}}, "not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Write(io.Discard, tc.ts, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestDTypeNames(t *testing.T) {
	for dt, name := range dtypeNames {
		got, err := ParseDType(name)
		if err != nil || got != dt {
			t.Errorf("ParseDType(%q) = %s, %v; want %s", name, got, err, dt)
		}
	}
	if _, err := DTypeName(dtypes.Complex128); err == nil {
		t.Error("DTypeName(Complex128) should fail")
	}
}
