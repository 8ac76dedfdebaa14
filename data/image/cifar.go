package image

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Example is one example of image classification: an image and its class index. Folder,
// CIFAR and Table all give Examples (each is a data.Dataset[Example] whose Get decodes one,
// on the loader's workers).
type Example struct {
	Image *RGB
	// Label is the index of the class in the dataset's Classes.
	Label int
	// Values holds, for a Table of another problem, the multi-label flags (one 0/1 per class)
	// or the regression value; nil for single-label classification.
	Values []float32
	// Source says where the example came from: the file, or for CIFAR the batch file and
	// the record's index in it ("data_batch_2[17]").
	Source string
}

// CIFAR is CIFAR-10 or CIFAR-100, all in memory (180 MB for the 60,000 images, as
// torchvision holds them). It is a data.Dataset[Example]: Get builds the HWC image of an
// example from the stored bytes.
type CIFAR struct {
	// Classes are the label names, from the meta file: CIFAR-10's 10, CIFAR-100's 100 fine
	// classes (or 20 coarse ones in the dataset Coarse returns).
	Classes []string
	pixels  []byte // 3072 bytes per example, channel-major as the files store them: 1024 R, G, B
	labels  []int
	sources []string // per example: file and index
	coarse  *CIFAR   // CIFAR-100's coarse view
}

const cifarPixels = 3 * 32 * 32

// LoadCIFAR reads the train or the test split of CIFAR-10 or CIFAR-100 from dir, in either
// distributed format, found from the files: the Python version (cifar-10-batches-py's
// data_batch_1 to 5, test_batch and batches.meta; cifar-100-python's train, test and meta),
// whose pickles are read without Python, or the binary version (cifar-10-batches-bin's
// data_batch_1.bin to 5, test_batch.bin and batches.meta.txt; cifar-100-binary's train.bin,
// test.bin, fine_label_names.txt and coarse_label_names.txt). dir is that folder, or the
// folder above it (torchvision's root).
//
// The labels are CIFAR-100's fine labels; Coarse gives the same images with the 20 coarse
// ones. A file that is truncated, holds a partial record, or a label outside the class
// list is an error naming it.
func LoadCIFAR(dir string, train bool) (*CIFAR, error) {
	for _, sub := range []string{"", "cifar-10-batches-py", "cifar-10-batches-bin", "cifar-100-python", "cifar-100-binary"} {
		d := filepath.Join(dir, sub)
		switch {
		case exists(d, "data_batch_1"):
			return cifar10Py(d, train)
		case exists(d, "data_batch_1.bin"):
			return cifarBin(d, train, false)
		case exists(d, "train") && exists(d, "meta"):
			return cifar100Py(d, train)
		case exists(d, "train.bin"):
			return cifarBin(d, train, true)
		}
	}
	return nil, fmt.Errorf("image: %s: no CIFAR files (data_batch_1, data_batch_1.bin, train or train.bin) in it or in cifar-10-batches-py, cifar-10-batches-bin, cifar-100-python, cifar-100-binary below it", dir)
}

func exists(dir, name string) bool {
	st, err := os.Stat(filepath.Join(dir, name))
	return err == nil && st.Mode().IsRegular()
}

// Len is the number of examples.
func (c *CIFAR) Len() int { return len(c.labels) }

// Get returns example i, its image laid out HWC.
func (c *CIFAR) Get(i int) (Example, error) {
	if i < 0 || i >= len(c.labels) {
		return Example{}, fmt.Errorf("image: CIFAR index %d out of range [0, %d)", i, len(c.labels))
	}
	src := c.pixels[i*cifarPixels : (i+1)*cifarPixels]
	m := &RGB{Width: 32, Height: 32, Pix: make([]uint8, cifarPixels)}
	for p := range 1024 {
		m.Pix[3*p], m.Pix[3*p+1], m.Pix[3*p+2] = src[p], src[1024+p], src[2048+p]
	}
	return Example{Image: m, Label: c.labels[i], Source: c.sources[i]}, nil
}

// Coarse returns CIFAR-100's images with their 20 coarse labels and names, or nil for
// CIFAR-10.
func (c *CIFAR) Coarse() *CIFAR { return c.coarse }

// checkLabels makes sure every label indexes names.
func checkLabels(file string, labels []int, first int, names []string) error {
	for k, l := range labels[first:] {
		if l < 0 || l >= len(names) {
			return fmt.Errorf("image: %s: record %d: label %d outside the %d classes of the meta file", file, k, l, len(names))
		}
	}
	return nil
}

func readPickleDict(path string) (*pyDict, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	v, err := unpickle(path, b)
	if err != nil {
		return nil, err
	}
	d, ok := v.(*pyDict)
	if !ok {
		return nil, fmt.Errorf("image: %s: pickle holds a %T, not a dict", path, v)
	}
	return d, nil
}

func dictStrings(path string, d *pyDict, key string) ([]string, error) {
	l, ok := d.vals[key].(*pyList)
	if !ok {
		return nil, fmt.Errorf("image: %s: no list %q (keys %v)", path, key, d.keys)
	}
	out := make([]string, len(*l))
	for i, v := range *l {
		if out[i], ok = v.(string); !ok {
			return nil, fmt.Errorf("image: %s: %s[%d] is a %T, not a str", path, key, i, v)
		}
	}
	return out, nil
}

func dictInts(path string, d *pyDict, key string) ([]int, error) {
	l, ok := d.vals[key].(*pyList)
	if !ok {
		return nil, fmt.Errorf("image: %s: no list %q (keys %v)", path, key, d.keys)
	}
	out := make([]int, len(*l))
	for i, v := range *l {
		n, ok := v.(int64)
		if !ok || n < 0 || n > 1<<20 {
			return nil, fmt.Errorf("image: %s: %s[%d] = %v is not a label", path, key, i, v)
		}
		out[i] = int(n)
	}
	return out, nil
}

// addPickleBatch appends one Python-version batch file to c (and to its coarse view).
func (c *CIFAR) addPickleBatch(path, labelKey string) error {
	d, err := readPickleDict(path)
	if err != nil {
		return err
	}
	a, ok := d.vals["data"].(*pyArray)
	if !ok {
		return fmt.Errorf("image: %s: no numpy array \"data\" (keys %v)", path, d.keys)
	}
	if len(a.shape) != 2 || a.shape[1] != cifarPixels {
		return fmt.Errorf("image: %s: data has shape %v, want (N, 3072)", path, a.shape)
	}
	labels, err := dictInts(path, d, labelKey)
	if err != nil {
		return err
	}
	if len(labels) != a.shape[0] {
		return fmt.Errorf("image: %s: %d labels for %d images", path, len(labels), a.shape[0])
	}
	first := len(c.labels)
	c.pixels = append(c.pixels, a.data...)
	c.labels = append(c.labels, labels...)
	base := filepath.Base(path)
	for k := range labels {
		c.sources = append(c.sources, fmt.Sprintf("%s[%d]", base, k))
	}
	if err := checkLabels(path, c.labels, first, c.Classes); err != nil {
		return err
	}
	if c.coarse != nil {
		cl, err := dictInts(path, d, "coarse_labels")
		if err != nil {
			return err
		}
		if len(cl) != len(labels) {
			return fmt.Errorf("image: %s: %d coarse labels for %d images", path, len(cl), len(labels))
		}
		c.coarse.labels = append(c.coarse.labels, cl...)
		if err := checkLabels(path, c.coarse.labels, first, c.coarse.Classes); err != nil {
			return err
		}
	}
	return nil
}

func batchNames(train bool, ext string) []string {
	if !train {
		return []string{"test_batch" + ext}
	}
	var out []string
	for i := 1; i <= 5; i++ {
		out = append(out, fmt.Sprintf("data_batch_%d%s", i, ext))
	}
	return out
}

func cifar10Py(dir string, train bool) (*CIFAR, error) {
	meta := filepath.Join(dir, "batches.meta")
	d, err := readPickleDict(meta)
	if err != nil {
		return nil, err
	}
	c := &CIFAR{}
	if c.Classes, err = dictStrings(meta, d, "label_names"); err != nil {
		return nil, err
	}
	for _, n := range batchNames(train, "") {
		if err := c.addPickleBatch(filepath.Join(dir, n), "labels"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func cifar100Py(dir string, train bool) (*CIFAR, error) {
	meta := filepath.Join(dir, "meta")
	d, err := readPickleDict(meta)
	if err != nil {
		return nil, err
	}
	c := &CIFAR{coarse: &CIFAR{}}
	if c.Classes, err = dictStrings(meta, d, "fine_label_names"); err != nil {
		return nil, err
	}
	if c.coarse.Classes, err = dictStrings(meta, d, "coarse_label_names"); err != nil {
		return nil, err
	}
	name := "test"
	if train {
		name = "train"
	}
	if err := c.addPickleBatch(filepath.Join(dir, name), "fine_labels"); err != nil {
		return nil, err
	}
	c.coarse.pixels, c.coarse.sources = c.pixels, c.sources
	return c, nil
}

// readNames reads a binary version's label names, one a line, blank lines left out.
func readNames(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("image: %s: no label names", path)
	}
	return out, nil
}

// parseCIFARBin splits a binary-version batch into labels (the last label byte of each
// record: CIFAR-100 records start with the coarse, then the fine label), coarse labels
// (CIFAR-100) and pixels.
func parseCIFARBin(path string, b []byte, hundred bool) (labels, coarse []int, pixels []byte, err error) {
	nl := 1
	if hundred {
		nl = 2
	}
	rec := nl + cifarPixels
	if len(b) == 0 || len(b)%rec != 0 {
		return nil, nil, nil, fmt.Errorf("image: %s: %d bytes is not a whole number of %d-byte records (%d label byte(s) + 3072 pixels)", path, len(b), rec, nl)
	}
	n := len(b) / rec
	pixels = make([]byte, 0, n*cifarPixels)
	for k := range n {
		r := b[k*rec : (k+1)*rec]
		labels = append(labels, int(r[nl-1]))
		if hundred {
			coarse = append(coarse, int(r[0]))
		}
		pixels = append(pixels, r[nl:]...)
	}
	return labels, coarse, pixels, nil
}

func cifarBin(dir string, train, hundred bool) (*CIFAR, error) {
	c := &CIFAR{}
	var files []string
	var err error
	if hundred {
		c.coarse = &CIFAR{}
		if c.Classes, err = readNames(filepath.Join(dir, "fine_label_names.txt")); err != nil {
			return nil, err
		}
		if c.coarse.Classes, err = readNames(filepath.Join(dir, "coarse_label_names.txt")); err != nil {
			return nil, err
		}
		files = []string{"test.bin"}
		if train {
			files = []string{"train.bin"}
		}
	} else {
		if c.Classes, err = readNames(filepath.Join(dir, "batches.meta.txt")); err != nil {
			return nil, err
		}
		files = batchNames(train, ".bin")
	}
	for _, f := range files {
		path := filepath.Join(dir, f)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
		labels, coarse, pixels, err := parseCIFARBin(path, b, hundred)
		if err != nil {
			return nil, err
		}
		first := len(c.labels)
		c.labels = append(c.labels, labels...)
		c.pixels = append(c.pixels, pixels...)
		for k := range labels {
			c.sources = append(c.sources, fmt.Sprintf("%s[%d]", f, k))
		}
		if err := checkLabels(path, c.labels, first, c.Classes); err != nil {
			return nil, err
		}
		if hundred {
			c.coarse.labels = append(c.coarse.labels, coarse...)
			if err := checkLabels(path, c.coarse.labels, first, c.coarse.Classes); err != nil {
				return nil, err
			}
		}
	}
	if hundred {
		c.coarse.pixels, c.coarse.sources = c.pixels, c.sources
	}
	return c, nil
}
