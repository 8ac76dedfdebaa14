package image_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/image"
)

var _ data.Dataset[image.Example] = (*image.Folder)(nil)

// tree writes files below a temporary root: name -> fixture image ("" for a text file).
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, fixture := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		dir := filepath.Dir(p)
		if strings.HasSuffix(name, "/") {
			dir = p
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "/") {
			continue
		}
		b := []byte("not an image\n")
		if fixture != "" {
			var err error
			if b, err = os.ReadFile(filepath.Join("testdata/decode", fixture)); err != nil {
				if b, err = os.ReadFile(fixture); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func rel(t *testing.T, root string, f *image.Folder) []string {
	var out []string
	for i := range f.Len() {
		r, err := filepath.Rel(root, f.Path(i))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(r))
	}
	return out
}

func labels(t *testing.T, f *image.Folder) []int {
	var out []int
	for i := range f.Len() {
		ex, err := f.Get(i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ex.Label)
	}
	return out
}

// TestFolderAsImageFolder: torchvision's layout, order and labels.
func TestFolderAsImageFolder(t *testing.T) {
	root := tree(t, map[string]string{
		"dog/x.gif": "p_trns.gif", "dog/notes.txt": "", "readme.png": "rgb.png",
		"cat/z.png": "rgb.png", "cat/a.PNG": "l.png", "cat/sub/b.JPG": "q420.jpg", "cat/sub-2/c.webp": "lossless.webp", "cat/sub/x/d.bmp": "rgb.bmp",
		"bird/deep/er/e.tiff": "rgb.tif", "bird/f.Jpeg": "gray.jpg",
	})
	f, err := image.OpenFolder(root, image.FolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"bird", "cat", "dog"}; !slices.Equal(f.Classes, want) {
		t.Fatalf("classes %v, want %v", f.Classes, want)
	}
	// torchvision sorts os.walk's folders by path: cat < cat/sub < cat/sub-2 < cat/sub/x, as
	// '-' (0x2d) sorts before '/' (0x2f); a depth-first walk would put cat/sub/x before cat/sub-2.
	want := []string{"bird/f.Jpeg", "bird/deep/er/e.tiff", "cat/a.PNG", "cat/z.png", "cat/sub/b.JPG", "cat/sub-2/c.webp", "cat/sub/x/d.bmp", "dog/x.gif"}
	if got := rel(t, root, f); !slices.Equal(got, want) {
		t.Fatalf("files %v,\nwant %v", got, want)
	}
	if got := labels(t, f); !slices.Equal(got, []int{0, 0, 1, 1, 1, 1, 1, 2}) {
		t.Fatalf("labels %v", got)
	}
	ex, err := f.Get(3)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := image.Load(f.Path(3))
	if err != nil || !bytes.Equal(ex.Image.Pix, direct.Pix) || ex.Source != f.Path(3) {
		t.Fatalf("Get(3) differs from Load(%s): %v", f.Path(3), err)
	}

	// A validation folder numbered with the train folder's classes.
	val := tree(t, map[string]string{"dog/v.png": "rgb.png", "cat/w.png": "rgb.png"})
	v, err := image.OpenFolder(val, image.FolderOptions{Classes: f.Classes})
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(t, v); !slices.Equal(got, []int{1, 2}) || !slices.Equal(v.Classes, f.Classes) {
		t.Fatalf("validation labels %v classes %v", got, v.Classes)
	}
	// One folder split: seeded, deterministic.
	tr1, te1, err := data.Split(f, 0.3, 7)
	if err != nil {
		t.Fatal(err)
	}
	tr2, te2, _ := data.Split(f, 0.3, 7)
	if !slices.Equal(tr1.Indices, tr2.Indices) || !slices.Equal(te1.Indices, te2.Indices) || te1.Len() != 3 {
		t.Fatalf("split %v/%v then %v/%v", tr1.Indices, te1.Indices, tr2.Indices, te2.Indices)
	}
}

func TestFolderErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		opts  image.FolderOptions
		want  string
	}{
		{"empty class", map[string]string{"cat/a.png": "rgb.png", "empty/notes.txt": ""}, image.FolderOptions{}, "class folder(s) ROOT/empty"},
		{"empty class folder", map[string]string{"cat/a.png": "rgb.png", "none/": ""}, image.FolderOptions{}, "ROOT/none"},
		{"no class folders", map[string]string{"a.png": "rgb.png"}, image.FolderOptions{}, "ROOT: no class folders"},
		{"no images", map[string]string{"a.txt": ""}, image.FolderOptions{LabelPattern: regexp.MustCompile(`^(.*)_\d+\.jpg$`)}, "ROOT: no images"},
		{"class not given", map[string]string{"cat/a.png": "rgb.png", "cow/b.png": "rgb.png"}, image.FolderOptions{Classes: []string{"cat", "dog"}}, `ROOT/cow: class folder "cow" is not one of the 2 classes`},
		{"pattern mismatch", map[string]string{"beagle_1.jpg": "q420.jpg", "x.jpg": "q420.jpg"}, image.FolderOptions{LabelPattern: regexp.MustCompile(`^(.*)_\d+\.jpg$`)}, "ROOT/x.jpg: file name does not match"},
		{"metadata missing file", map[string]string{"metadata.jsonl": "testdata/meta_missing.jsonl", "a.png": "rgb.png"}, image.FolderOptions{LabelColumn: "digit"}, `ROOT/metadata.jsonl:2: file_name "b.png": no such file`},
		{"metadata no label", map[string]string{"metadata.csv": "testdata/meta_nolabel.csv", "a.png": "rgb.png"}, image.FolderOptions{}, `lacks the file_name or "label" column`},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t, c.files)
			_, err := image.OpenFolder(root, c.opts)
			want := strings.ReplaceAll(c.want, "ROOT", root)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want %q", err, want)
			}
		})
	}
	// An image that does not decode fails on Get, naming it.
	root := tree(t, map[string]string{"cat/bad.jpg": "", "cat/good.png": "rgb.png"})
	f, err := image.OpenFolder(root, image.FolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(0); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "cat/bad.jpg")) {
		t.Fatalf("Get of a text file named .jpg: %v", err)
	}
}

// TestFolderLabelSources: labels from a file-name pattern (Accelerate's cv_example) and from
// metadata.jsonl / metadata.csv (Hugging Face's imagefolder).
func TestFolderLabelSources(t *testing.T) {
	root := tree(t, map[string]string{
		"beagle_12.jpg": "q420.jpg", "Abyssinian_3.jpg": "q444.jpg", "sub/beagle_1.jpg": "q422.jpg", "beagle_2.txt": "",
	})
	f, err := image.OpenFolder(root, image.FolderOptions{LabelPattern: regexp.MustCompile(`^(.*)_\d+\.jpg$`)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Classes, []string{"Abyssinian", "beagle"}) || !slices.Equal(labels(t, f), []int{0, 1, 1}) {
		t.Fatalf("classes %v labels %v files %v", f.Classes, labels(t, f), rel(t, root, f))
	}
	for _, meta := range []string{"testdata/meta.jsonl", "testdata/meta.csv"} {
		name := "metadata" + filepath.Ext(meta)
		root := tree(t, map[string]string{name: meta, "a.png": "rgb.png", "imgs/b.png": "l.png", "c.png": "p.png"})
		f, err := image.OpenFolder(root, image.FolderOptions{LabelColumn: "digit"})
		if err != nil {
			t.Fatal(err)
		}
		// Integer labels sort as numbers: 2 < 10.
		if !slices.Equal(f.Classes, []string{"2", "10"}) || !slices.Equal(labels(t, f), []int{1, 0, 1}) ||
			!slices.Equal(rel(t, root, f), []string{"a.png", "imgs/b.png", "c.png"}) {
			t.Fatalf("%s: classes %v labels %v files %v", meta, f.Classes, labels(t, f), rel(t, root, f))
		}
	}
}
