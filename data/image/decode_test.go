package image_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/image"
)

type fixture struct {
	Width, Height int
	Exact         bool
}

func readManifest(t testing.TB) map[string]fixture {
	t.Helper()
	b, err := os.ReadFile("testdata/decode/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]fixture
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// jpegTolerance is the largest per-channel difference from Pillow (libjpeg-turbo) allowed on
// the small JPEG and lossy WebP fixtures; docs/images.md measures it on photos.
const jpegTolerance = 3

// TestDecodeEqualsPillow decodes every fixture and compares with the RGB bytes Pillow 13.0.0
// gave for exif_transpose(open(f)).convert("RGB"): byte for byte for the lossless formats.
func TestDecodeEqualsPillow(t *testing.T) {
	m := readManifest(t)
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := m[name]
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata/decode", name)
			want, err := os.ReadFile(path + ".rgb")
			if err != nil {
				t.Fatal(err)
			}
			got, err := image.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if got.Width != f.Width || got.Height != f.Height {
				t.Fatalf("size %dx%d, Pillow %dx%d", got.Width, got.Height, f.Width, f.Height)
			}
			if len(got.Pix) != len(want) {
				t.Fatalf("%d bytes, Pillow %d", len(got.Pix), len(want))
			}
			worst, at := 0, -1
			for i := range want {
				d := int(got.Pix[i]) - int(want[i])
				if d < 0 {
					d = -d
				}
				if d > worst {
					worst, at = d, i
				}
			}
			if f.Exact && worst != 0 {
				px := at / 3
				t.Fatalf("differs from Pillow at x=%d y=%d channel %d: %d, Pillow %d",
					px%f.Width, px/f.Width, at%3, got.Pix[at], want[at])
			}
			if !f.Exact && worst > jpegTolerance {
				t.Fatalf("max difference from Pillow %d > %d", worst, jpegTolerance)
			}
			if !f.Exact {
				t.Logf("max abs difference from Pillow: %d", worst)
			}
		})
	}
}

// TestDecodeBadFiles: each broken file is an error naming it.
func TestDecodeBadFiles(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"truncated.png", "truncated png file"},
		{"truncated.jpg", "jpeg"},
		{"text.jpg", "not an image"},
		{"huge.png", "60000x60000 = 3600000000 pixels is over the limit of 178956970"},
	} {
		path := filepath.Join("testdata/bad", c.file)
		_, err := image.Load(path)
		if err == nil {
			t.Errorf("%s: no error", c.file)
			continue
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want the path and %q", c.file, err, c.want)
		}
	}
	if _, err := (image.Decoder{}).Decode("short.ppm", []byte("P6 4 4 255\n\x00\x01")); err == nil || !strings.Contains(err.Error(), "short.ppm: truncated pnm file") {
		t.Errorf("truncated PPM: %v", err)
	}
	// The limit is configurable: a small one refuses a fixture, a negative one lifts it.
	if _, err := (image.Decoder{MaxPixels: 100}).Load("testdata/decode/rgb.png"); err == nil || !strings.Contains(err.Error(), "13x9 = 117 pixels") {
		t.Errorf("MaxPixels 100: %v", err)
	}
	if _, err := (image.Decoder{MaxPixels: 117}).Load("testdata/decode/rgb.png"); err != nil {
		t.Errorf("MaxPixels 117: %v", err)
	}
	if _, err := (image.Decoder{MaxPixels: -1}).Load("testdata/bad/huge.png"); err == nil || strings.Contains(err.Error(), "limit") {
		t.Errorf("no limit: huge.png should fail on its data, not the limit: %v", err)
	}
}
