package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func addSeeds(f *testing.F, pattern string) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files %s: %v", pattern, err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzPickle: the pickle reader returns a value or an error, never panics or hangs, on any
// bytes; seeds are the CIFAR fixtures' pickles.
func FuzzPickle(f *testing.F) {
	addSeeds(f, "testdata/cifar/cifar-10*-py/*")
	addSeeds(f, "testdata/cifar/cifar-100-python/*")
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := unpickle("fuzz.pkl", b)
		if err == nil {
			if d, ok := v.(*pyDict); ok {
				if a, ok := d.vals["data"].(*pyArray); ok {
					n := 1
					for _, s := range a.shape {
						n *= s
					}
					if n != len(a.data) {
						t.Fatalf("array of shape %v with %d bytes", a.shape, len(a.data))
					}
				}
			}
		}
	})
}

// FuzzCIFARBinary: a binary-version batch splits into whole records or is an error.
func FuzzCIFARBinary(f *testing.F) {
	addSeeds(f, "testdata/cifar/cifar-10*-bin/*.bin")
	addSeeds(f, "testdata/cifar/cifar-100-binary/*.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, hundred := range []bool{false, true} {
			labels, coarse, pixels, err := parseCIFARBin("fuzz.bin", b, hundred)
			if err != nil {
				continue
			}
			if len(pixels) != len(labels)*cifarPixels || (hundred && len(coarse) != len(labels)) {
				t.Fatalf("%d labels, %d coarse, %d pixel bytes", len(labels), len(coarse), len(pixels))
			}
		}
	})
}

// FuzzDecode: any bytes decode to a well-formed image or give an error; a panic (which
// Decode turns into a "decoder failed" error) is a failure. Seeds are the decoding fixtures.
func FuzzDecode(f *testing.F) {
	files, err := filepath.Glob("testdata/decode/*")
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range files {
		if filepath.Ext(p) == ".rgb" || filepath.Ext(p) == ".json" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decoder{MaxPixels: 1 << 20}.Decode("fuzz", b)
		if err != nil {
			if strings.Contains(err.Error(), "decoder failed") {
				t.Fatal(err)
			}
			return
		}
		if m.Width <= 0 || m.Height <= 0 || len(m.Pix) != m.Width*m.Height*3 {
			t.Fatalf("%dx%d image with %d bytes", m.Width, m.Height, len(m.Pix))
		}
	})
}
