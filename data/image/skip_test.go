package image_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/image"
	"github.com/gomlx/gomlx/core/tensors"
)

// sizeCollate collates an example's width as its input, enough to see which examples a batch holds.
func sizeCollate(ex []image.Example) ([]*tensors.Tensor, *tensors.Tensor, error) {
	w := make([]int32, len(ex))
	l := make([]int32, len(ex))
	for i, e := range ex {
		w[i], l[i] = int32(e.Image.Width), int32(e.Label)
	}
	return []*tensors.Tensor{tensors.FromValue(w)}, tensors.FromValue(l), nil
}

// TestFolderSkipBad: with SkipBad a truncated PNG, a text file named .jpg and a PNG whose
// header claims 60000x60000 are left out of training and counted by the loader, each named to
// OnSkip; without it the first ends the pass naming the file.
func TestFolderSkipBad(t *testing.T) {
	root := tree(t, map[string]string{
		"cat/a.png": "rgb.png", "cat/b.png": "testdata/bad/truncated.png", "cat/c.jpg": "testdata/bad/text.jpg",
		"dog/d.png": "testdata/bad/huge.png", "dog/e.png": "rgb.png", "dog/f.jpg": "q420.jpg",
	})
	run := func(skip bool) ([]int, *data.Loader[image.Example], []string, error) {
		f, err := image.OpenFolder(root, image.FolderOptions{SkipBad: skip})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var named []string
		l, err := data.NewLoader[image.Example](f, data.LoaderConfig[image.Example]{BatchSize: 3, Workers: 2, Collate: sizeCollate,
			OnSkip: func(_ int, err error) { mu.Lock(); named = append(named, err.Error()); mu.Unlock() }})
		if err != nil {
			t.Fatal(err)
		}
		var real []int
		for gb, err := range l.Epoch() {
			if err != nil {
				return nil, l, named, err
			}
			for _, b := range gb.Shards {
				for k, r := range b.Real {
					if r {
						real = append(real, b.Indices[k])
					}
				}
			}
		}
		slices.Sort(named)
		return real, l, named, nil
	}
	real, l, named, err := run(true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(real, []int{0, 4, 5}) || l.Skipped() != 3 || len(named) != 3 {
		t.Fatalf("real %v, skipped %d, named %q", real, l.Skipped(), named)
	}
	for i, want := range []string{"cat/b.png: corrupt or truncated png file", "cat/c.jpg: not an image", "dog/d.png: 60000x60000"} {
		if !strings.Contains(named[i], filepath.Join(root, want)) {
			t.Errorf("OnSkip %d: %q, want %q", i, named[i], want)
		}
	}
	if _, _, _, err := run(false); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "cat/b.png")) || errors.Is(err, data.ErrSkipped) {
		t.Errorf("without SkipBad: %v", err)
	}
	// A file that cannot be read is no broken image: not skipped.
	f, err := image.OpenFolder(root, image.FolderOptions{SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := removeFile(filepath.Join(root, "dog/e.png")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(4); err == nil || errors.Is(err, data.ErrSkipped) || !strings.Contains(err.Error(), "dog/e.png") {
		t.Errorf("removed file: %v", err)
	}
}

func removeFile(p string) error { return os.Remove(p) }
