// Package localpath turns a relative path read from a file (a shard named by
// model.safetensors.index.json, a file listed in a checkpoint's manifest) into a path inside
// that file's folder, refusing one that leads out of it: absolute, with "..", or through a
// symbolic link to somewhere else. A downloaded folder cannot make goaccel read any other file.
package localpath

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// Join returns dir joined with name, a relative path as a file in dir wrote it (slashes, as
// Hugging Face's and goaccel's files write them). It is an error, quoting name, when name is
// empty, absolute, names dir itself, or leads out of dir: lexically (".." past dir) or because
// what it names, once symbolic links are followed, lies outside dir. One exception keeps the
// Hugging Face hub cache working: in a snapshot (<cache>/models--org--name/snapshots/<rev>/),
// whose files the hub links to the repository's blobs/, a link into that blobs/ folder is
// inside. A name that does not exist (yet) is returned joined: opening it says it is missing.
func Join(dir, name string) (string, error) {
	local := filepath.FromSlash(name)
	switch {
	case name == "":
		return "", errors.New("an empty file name")
	case filepath.IsAbs(local) || strings.HasPrefix(name, "/") || filepath.VolumeName(local) != "":
		return "", fmt.Errorf("%q is an absolute path: want a file name relative to the folder", name)
	case !filepath.IsLocal(local):
		return "", fmt.Errorf("%q leads outside the folder (..): want a file name inside it", name)
	case filepath.Clean(local) == ".":
		return "", fmt.Errorf("%q names the folder itself: want a file inside it", name)
	}
	path := filepath.Join(dir, local)
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil
	}
	if err != nil {
		return "", fmt.Errorf("%q: %w", name, err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("folder %s: %w", dir, err)
	}
	if inside(realDir, real) || inside(hubBlobs(realDir), real) {
		return path, nil
	}
	return "", fmt.Errorf("%q is a symbolic link (or goes through one) to %s, outside the folder: want a file inside it", name, real)
}

// inside reports whether path lies strictly inside dir (both without symbolic links).
func inside(dir, path string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && filepath.IsLocal(rel)
}

// hubBlobs returns the blobs/ folder of the hub cache repository whose snapshot dir is, or ""
// when dir is not <repo>/snapshots/<rev> of a repository folder named as the hub names them
// (models--, datasets--, spaces-- before the owner and name).
func hubBlobs(dir string) string {
	snapshots := filepath.Dir(dir)
	repo := filepath.Dir(snapshots)
	if filepath.Base(snapshots) != "snapshots" {
		return ""
	}
	for _, kind := range []string{"models--", "datasets--", "spaces--"} {
		if strings.HasPrefix(filepath.Base(repo), kind) {
			return filepath.Join(repo, "blobs")
		}
	}
	return ""
}
