package safetensors

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

func TestFileRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	in := sampleTensors()
	if err := WriteFile(path, in, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Path() != path || f.Header().Metadata["format"] != "pt" || len(f.Header().Tensors) != len(in) {
		t.Errorf("Path %q, metadata %v, %d tensors", f.Path(), f.Header().Metadata, len(f.Header().Tensors))
	}
	if f.Header().DataOffset%8 != 0 {
		t.Errorf("data starts at %d, want 8-byte alignment", f.Header().DataOffset)
	}
	// Backwards, to read out of file order.
	for i := len(in) - 1; i >= 0; i-- {
		want := in[i]
		ti, ok := f.Lookup(want.Name)
		if !ok || !ti.Shape().Equal(want.Tensor.Shape()) {
			t.Errorf("Lookup(%q) = %v, %v; want shape %s", want.Name, ti, ok, want.Tensor.Shape())
		}
		got, err := f.Read(want.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(want.Tensor) {
			t.Errorf("%s: read %v, want %v", want.Name, got, want.Tensor)
		}
	}
	if _, err := f.Read("missing"); err == nil || !strings.Contains(err.Error(), `no tensor "missing"`) ||
		!strings.Contains(err.Error(), path) {
		t.Errorf("reading a missing tensor: error %v, want one naming the file and the tensor", err)
	}
	if _, ok := f.Lookup("missing"); ok {
		t.Error(`Lookup("missing") found something`)
	}
}

func TestOpenDamaged(t *testing.T) {
	var whole strings.Builder
	if _, err := Write(&whole, []Named{
		{"a", tensors.FromValue([]float32{1, 2, 3})},
		{"b", tensors.FromValue([]int64{4, 5})},
	}, nil); err != nil {
		t.Fatal(err)
	}
	good := whole.String()
	cases := []struct {
		name     string
		contents string
		want     []string // substrings of the error, besides the path
	}{
		{"empty", "", []string{"header length"}},
		{"garbage", "garbage garbage garbage", []string{"not a safetensors file"}},
		{"header longer than the file", good[:8] + "{}", []string{"out of range"}},
		{"last tensor cut", good[:len(good)-1], []string{`tensor "b"`, "does not fit", "truncated"}},
		{"all data cut", good[:len(good)-16-12], []string{`tensor "a"`, "does not fit"}},
		{"bad header", rawFileString(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, "abcd"), []string{"needs 8"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "model.safetensors")
			if err := os.WriteFile(path, []byte(c.contents), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := Open(path)
			if err == nil {
				f.Close()
				t.Fatal("Open succeeded")
			}
			for _, want := range append(c.want, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
	if _, err := Open(filepath.Join(t.TempDir(), "absent.safetensors")); err == nil ||
		!strings.Contains(err.Error(), "absent.safetensors") {
		t.Errorf("opening a missing file: %v", err)
	}
}

// TestFileReadAfterTruncation covers a file that shrinks after Open: Read reports it.
func TestFileReadAfterTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := WriteFile(path, []Named{{"w", tensors.FromValue([]float32{1, 2, 3, 4})}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := os.Stat(path)
	if err := os.Truncate(path, info.Size()-4); err != nil {
		t.Fatal(err)
	}
	_, err = f.Read("w")
	if err == nil || !strings.Contains(err.Error(), `tensor "w"`) || !strings.Contains(err.Error(), io.ErrUnexpectedEOF.Error()) {
		t.Errorf("reading a tensor cut after Open: error %v", err)
	}
}

// rawFileString is rawFile as a string.
func rawFileString(header, data string) string {
	return string(rawFile(header, []byte(data)))
}
