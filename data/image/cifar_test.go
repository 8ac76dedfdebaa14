package image_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/image"
)

var _ data.Dataset[image.Example] = (*image.CIFAR)(nil)

type cifarExpect struct {
	Labels, Coarse  []int
	HWCSha256       string   `json:"hwc_sha256"`
	FirstPixel      []int    `json:"first_pixel"`
	NamesJSON       []string `json:"names"`
	CoarseNamesJSON []string `json:"coarse_names"`
}

func readCIFARExpect(t *testing.T) map[string]cifarExpect {
	b, err := os.ReadFile("testdata/cifar/expect.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]cifarExpect
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkCIFAR compares a loaded split with what the Python side wrote.
func checkCIFAR(t *testing.T, c *image.CIFAR, labels []int, names []string, e cifarExpect) {
	t.Helper()
	if !slices.Equal(c.Classes, names) {
		t.Fatalf("classes %v, want %v", c.Classes, names)
	}
	if c.Len() != len(labels) {
		t.Fatalf("Len %d, want %d", c.Len(), len(labels))
	}
	h := sha256.New()
	for i := range c.Len() {
		ex, err := c.Get(i)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Label != labels[i] {
			t.Fatalf("example %d (%s): label %d, want %d", i, ex.Source, ex.Label, labels[i])
		}
		if i == 0 {
			r, g, b := ex.Image.At(0, 0)
			if got := []int{int(r), int(g), int(b)}; !slices.Equal(got, e.FirstPixel) {
				t.Fatalf("first pixel %v, want %v", got, e.FirstPixel)
			}
		}
		h.Write(ex.Image.Pix)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.HWCSha256 {
		t.Fatalf("HWC pixels sha256 %s, want %s (numpy's reshape(-1,3,32,32).transpose(0,2,3,1))", got, e.HWCSha256)
	}
}

// TestCIFARBothFormats reads the tiny CIFAR-10 and CIFAR-100 sets in the Python (Python 2
// pickles) and binary formats and compares labels, names and pixels with the fixture script's.
func TestCIFARBothFormats(t *testing.T) {
	exp := readCIFARExpect(t)
	for _, c := range []struct{ dir, key string }{
		{"cifar-10-batches-py", "cifar10"}, {"cifar-10-batches-bin", "cifar10"},
		{"cifar-100-python", "cifar100"}, {"cifar-100-binary", "cifar100"},
	} {
		for _, split := range []string{"train", "test"} {
			t.Run(c.dir+"/"+split, func(t *testing.T) {
				e := exp[c.key+"/"+split]
				ds, err := image.LoadCIFAR(filepath.Join("testdata/cifar", c.dir), split == "train")
				if err != nil {
					t.Fatal(err)
				}
				checkCIFAR(t, ds, e.Labels, e.NamesJSON, e)
				if c.key == "cifar100" {
					checkCIFAR(t, ds.Coarse(), e.Coarse, e.CoarseNamesJSON, e)
				} else if ds.Coarse() != nil {
					t.Fatal("CIFAR-10 has a coarse view")
				}
			})
		}
	}
	// torchvision's root: the folder above.
	if _, err := image.LoadCIFAR("testdata/cifar", true); err != nil {
		t.Fatal(err)
	}
}

// copyDir copies a fixture folder into a temporary one, to break a file in it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestCIFARBadFiles(t *testing.T) {
	edit := func(dir, file string, f func([]byte) []byte) (string, string) {
		d := copyDir(t, filepath.Join("testdata/cifar", dir))
		p := filepath.Join(d, file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f(b), 0o644); err != nil {
			t.Fatal(err)
		}
		return d, p
	}
	for _, c := range []struct {
		name, dir, file string
		f               func([]byte) []byte
		want            string
	}{
		{"truncated pickle", "cifar-10-batches-py", "data_batch_3", func(b []byte) []byte { return b[:len(b)/2] }, "truncated"},
		{"partial record", "cifar-10-batches-bin", "data_batch_2.bin", func(b []byte) []byte { return b[:len(b)-100] }, "not a whole number of 3073-byte records"},
		{"partial record 100", "cifar-100-binary", "train.bin", func(b []byte) []byte { return append(b, 1, 2, 3) }, "3074-byte records"},
		{"label outside", "cifar-10-batches-bin", "data_batch_4.bin", func(b []byte) []byte { b[3073] = 10; return b }, "record 1: label 10 outside the 10 classes"},
		{"coarse label outside", "cifar-100-binary", "train.bin", func(b []byte) []byte { b[0] = 20; return b }, "record 0: label 20 outside the 20 classes"},
		{"unknown opcode", "cifar-10-batches-py", "data_batch_1", func(b []byte) []byte { return []byte("\x80\x02}\x94.") }, "unsupported opcode 0x94"},
		{"foreign global", "cifar-10-batches-py", "data_batch_1", func(b []byte) []byte { return []byte("\x80\x02cos\nsystem\nU\x02ls\x85R.") }, "global os.system"},
		{"protocol 4", "cifar-100-python", "meta", func(b []byte) []byte { return []byte("\x80\x04}.") }, "protocol 4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, p := edit(c.dir, c.file, c.f)
			_, err := image.LoadCIFAR(d, true)
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %s and %q", err, p, c.want)
			}
		})
	}
	if _, err := image.LoadCIFAR(t.TempDir(), true); err == nil || !strings.Contains(err.Error(), "no CIFAR files") {
		t.Fatalf("empty folder: %v", err)
	}
}
