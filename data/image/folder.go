package image

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/data"
)

// Extensions are the file name endings Folder takes as images, compared without regard to
// case: torchvision's IMG_EXTENSIONS.
var Extensions = []string{".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp", ".gif"}

// FolderOptions say how OpenFolder finds the labels.
type FolderOptions struct {
	// Classes, when set, is the class list to use instead of the one found: pass the train
	// folder's Classes when opening its validation folder, so that both number the classes
	// alike. A class folder (or label) not in it is an error; a class of it with no folder
	// simply has no examples.
	Classes []string
	// LabelPattern, when set, takes each image's label from its file name (the base name,
	// without folders): the first parenthesised group of the expression, as Accelerate's
	// cv_example does with `^(.*)_\d+\.jpg$`. Every image below the folder, at any depth, is
	// an example; a name that does not match is an error. The classes are the labels found,
	// sorted.
	LabelPattern *regexp.Regexp
	// LabelColumn is the column of metadata.jsonl or metadata.csv that holds the labels
	// ("label" when empty).
	LabelColumn string
	// Decoder decodes the images (its MaxPixels limit).
	Decoder Decoder
	// SkipBad leaves out of training an image that does not decode (truncated, corrupt, not
	// an image, over Decoder.MaxPixels): Get returns its error marked with data.Skip, so the
	// loaders mask its slot and count it (data.Loader.Skipped), as --skip_bad_images asks.
	// Without it such an image ends the pass with an error naming the file. A file that
	// cannot be read (removed, no permission) is an error either way.
	SkipBad bool
}

// Folder is a folder of image files as a data.Dataset[Example]. Opening it lists the files
// and reads no image; Get decodes one.
//
// Without options its layout is torchvision's ImageFolder: a class is a folder just below
// the root (the classes sorted by name, numbered from 0), its images are the files below it
// at any depth whose names end in one of Extensions, listed as torchvision lists them (the
// folders in sorted order of their paths, the files of each sorted by name); other files,
// and files directly in the root, are left out. A class folder without images is an
// error, as it is for torchvision.
//
// With a metadata.jsonl or metadata.csv file in the root, the layout is Hugging Face
// datasets' imagefolder with metadata: each row names an image by its file_name (relative
// to the root) and gives its label in the LabelColumn column; the classes are the labels
// found, sorted (numerically when they are all integers).
//
// For a train and a validation split, open the two folders (the second with the first's
// Classes), or split one folder with data.Split(folder, fraction, seed), which is seeded and
// deterministic.
type Folder struct {
	// Classes are the class names; example labels index them.
	Classes []string
	files   []string
	labels  []int
	dec     Decoder
	skipBad bool
}

// Len is the number of images.
func (f *Folder) Len() int { return len(f.files) }

// Get reads and decodes image i.
func (f *Folder) Get(i int) (Example, error) {
	if i < 0 || i >= len(f.files) {
		return Example{}, fmt.Errorf("image: folder index %d out of range [0, %d)", i, len(f.files))
	}
	b, err := os.ReadFile(f.files[i])
	if err != nil {
		return Example{}, fmt.Errorf("image: %w", err)
	}
	m, err := f.dec.Decode(f.files[i], b)
	if err != nil {
		return Example{}, badImage(err, f.skipBad)
	}
	return Example{Image: m, Label: f.labels[i], Source: f.files[i]}, nil
}

// badImage is the error of an image that does not decode: marked with data.Skip when skip.
func badImage(err error, skip bool) error {
	if skip {
		return data.Skip(err)
	}
	return err
}

// Path is the file of image i.
func (f *Folder) Path(i int) string { return f.files[i] }

// OpenFolder lists the images of root and their labels; see Folder for the layouts.
func OpenFolder(root string, opts FolderOptions) (*Folder, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("image: %s is not a folder", root)
	}
	f := &Folder{dec: opts.Decoder, skipBad: opts.SkipBad}
	var names []string // one label name per file
	switch meta := metadataFile(root); {
	case opts.LabelPattern != nil:
		f.files, err = listImages(root)
		if err != nil {
			return nil, err
		}
		for _, p := range f.files {
			m := opts.LabelPattern.FindStringSubmatch(filepath.Base(p))
			if m == nil || len(m) < 2 {
				return nil, fmt.Errorf("image: %s: file name does not match the label pattern %s", p, opts.LabelPattern)
			}
			names = append(names, m[1])
		}
	case meta != "":
		col := opts.LabelColumn
		if col == "" {
			col = "label"
		}
		if f.files, names, err = readMetadata(root, meta, col); err != nil {
			return nil, err
		}
	default:
		return openClassFolders(root, opts, f)
	}
	if len(f.files) == 0 {
		return nil, fmt.Errorf("image: %s: no images (files ending in %s)", root, strings.Join(Extensions, " "))
	}
	f.Classes = opts.Classes
	if f.Classes == nil {
		f.Classes = sortedLabels(names)
	}
	index := map[string]int{}
	for i, c := range f.Classes {
		index[c] = i
	}
	for i, n := range names {
		k, ok := index[n]
		if !ok {
			return nil, fmt.Errorf("image: %s: label %q is not one of the %d classes given", f.files[i], n, len(f.Classes))
		}
		f.labels = append(f.labels, k)
	}
	return f, nil
}

// sortedLabels are the distinct labels, sorted as numbers when all are integers.
func sortedLabels(names []string) []string {
	u := slices.Clone(names)
	slices.Sort(u)
	u = slices.Compact(u)
	ints := true
	for _, s := range u {
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			ints = false
			break
		}
	}
	if ints {
		sort.SliceStable(u, func(i, j int) bool {
			a, _ := strconv.ParseInt(u[i], 10, 64)
			b, _ := strconv.ParseInt(u[j], 10, 64)
			return a < b
		})
	}
	return u
}

func isImage(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return slices.Contains(Extensions, ext)
}

// listImages lists the images below dir as torchvision does: the folders (symbolic links
// followed) in sorted order of their paths, the files of each in sorted order of names.
func listImages(dir string) ([]string, error) {
	type folder struct {
		path  string
		files []string
	}
	var folders []folder
	seen := map[string]bool{}
	var walk func(d string) error
	walk = func(d string) error {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return fmt.Errorf("image: %w", err)
		}
		if seen[real] {
			return nil // a link back up the tree
		}
		seen[real] = true
		ents, err := os.ReadDir(d)
		if err != nil {
			return fmt.Errorf("image: %w", err)
		}
		fo := folder{path: d}
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			isDir := e.IsDir()
			if e.Type()&os.ModeSymlink != 0 {
				if st, err := os.Stat(p); err == nil {
					isDir = st.IsDir()
				}
			}
			switch {
			case isDir:
				if err := walk(p); err != nil {
					return err
				}
			case isImage(e.Name()):
				fo.files = append(fo.files, p)
			}
		}
		folders = append(folders, fo)
		return nil
	}
	if err := walk(dir); err != nil {
		return nil, err
	}
	sort.Slice(folders, func(i, j int) bool { return folders[i].path < folders[j].path })
	var out []string
	for _, fo := range folders {
		out = append(out, fo.files...) // os.ReadDir sorts by name
	}
	return out, nil
}

func openClassFolders(root string, opts FolderOptions, f *Folder) (*Folder, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	var found []string
	for _, e := range ents {
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			st, err := os.Stat(filepath.Join(root, e.Name()))
			isDir = err == nil && st.IsDir()
		}
		if isDir {
			found = append(found, e.Name())
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("image: %s: no class folders in it (an image folder holds one folder per class), nor a metadata.jsonl or metadata.csv", root)
	}
	f.Classes = found
	if opts.Classes != nil {
		f.Classes = opts.Classes
		for _, c := range found {
			if !slices.Contains(opts.Classes, c) {
				return nil, fmt.Errorf("image: %s: class folder %q is not one of the %d classes given", filepath.Join(root, c), c, len(opts.Classes))
			}
		}
	}
	var empty []string
	for k, c := range f.Classes {
		if !slices.Contains(found, c) {
			continue
		}
		files, err := listImages(filepath.Join(root, c))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			empty = append(empty, filepath.Join(root, c))
		}
		f.files = append(f.files, files...)
		for range files {
			f.labels = append(f.labels, k)
		}
	}
	if len(empty) > 0 {
		return nil, fmt.Errorf("image: no images (files ending in %s) in the class folder(s) %s", strings.Join(Extensions, " "), strings.Join(empty, ", "))
	}
	return f, nil
}

func metadataFile(root string) string {
	for _, n := range []string{"metadata.jsonl", "metadata.csv"} {
		if exists(root, n) {
			return filepath.Join(root, n)
		}
	}
	return ""
}

// readMetadata reads the file_name and label columns of a metadata.jsonl or .csv file.
func readMetadata(root, path, col string) (files, labels []string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("image: %w", err)
	}
	add := func(line int, name, label any) error {
		fn, ok := name.(string)
		if !ok || fn == "" {
			return fmt.Errorf("image: %s:%d: no file_name", path, line)
		}
		var ls string
		switch v := label.(type) {
		case string:
			ls = v
		case json.Number:
			ls = v.String()
		default:
			return fmt.Errorf("image: %s:%d: no %q value (a string or a number)", path, line, col)
		}
		p := filepath.Join(root, filepath.FromSlash(fn))
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("image: %s:%d: file_name %q: no such file %s", path, line, fn, p)
		}
		files = append(files, p)
		labels = append(labels, ls)
		return nil
	}
	if strings.HasSuffix(path, ".jsonl") {
		for i, l := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(l))
			dec.UseNumber()
			var row map[string]any
			if err := dec.Decode(&row); err != nil {
				return nil, nil, fmt.Errorf("image: %s:%d: %v", path, i+1, err)
			}
			if err := add(i+1, row["file_name"], row[col]); err != nil {
				return nil, nil, err
			}
		}
		return files, labels, nil
	}
	r := csv.NewReader(bytes.NewReader(b))
	header, err := r.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("image: %s: header: %v", path, err)
	}
	fi, li := slices.Index(header, "file_name"), slices.Index(header, col)
	if fi < 0 || li < 0 {
		return nil, nil, fmt.Errorf("image: %s: header %v lacks the file_name or %q column", path, header, col)
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			return nil, nil, fmt.Errorf("image: %s: %v", path, err)
		}
		if err := add(line, rec[fi], rec[li]); err != nil {
			return nil, nil, err
		}
	}
	return files, labels, nil
}
