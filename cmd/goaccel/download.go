package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/goaccel/goaccel/hub"
	flag "github.com/spf13/pflag"
)

// downloadCmd is `goaccel download REPO_ID [FILES...]`, the Go counterpart of huggingface_hub's
// `hf download`: the repository's files (or the ones named, or those --include/--exclude
// leave) into the Hugging Face cache shared with Python, printing the snapshot folder (or
// --local_dir) on stdout, a progress bar per file on stderr.
func downloadCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("goaccel download", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		repoType, revision, localDir, cacheDir, token string
		include, exclude                              []string
	)
	fs.StringVar(&repoType, "repo_type", "model", `"model" or "dataset"`)
	fs.StringVar(&revision, "revision", "", "branch, tag or commit (default main; also REPO_ID@REVISION)")
	fs.StringArrayVar(&include, "include", nil, "download only the files matching this pattern (fnmatch, '*' crosses '/'; repeatable)")
	fs.StringArrayVar(&exclude, "exclude", nil, "leave out the files matching this pattern (repeatable)")
	fs.StringVar(&localDir, "local_dir", "", "also copy the files into this folder (plain files, the repository's layout) and print it instead")
	fs.StringVar(&cacheDir, "cache_dir", "", "the hub cache folder (default $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)")
	fs.StringVar(&token, "token", "", "access token for a gated or private repository (default $HF_TOKEN, else $HF_TOKEN_PATH or $HF_HOME/token)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: goaccel download [flags] REPO_ID[@REVISION] [FILES...]\n\n"+
			"Downloads a Hugging Face Hub repository (all its files, the FILES named, or those --include and\n"+
			"--exclude leave) into the Hugging Face cache that huggingface_hub and transformers share, and\n"+
			"prints the snapshot folder. Offline ($HF_HUB_OFFLINE=1) it prints the cached one. $HF_ENDPOINT\n"+
			"names another Hub.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr, false); !ok {
		return code
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return 2
	}
	if repoType != string(hub.Model) && repoType != string(hub.Dataset) {
		fmt.Fprintf(stderr, "goaccel download: --repo_type %s: want model or dataset\n", repoType)
		return 2
	}
	repo, err := hub.ParseRepo(fs.Arg(0), hub.RepoType(repoType))
	if err != nil {
		fmt.Fprintf(stderr, "goaccel download: %v\n", err)
		return 2
	}
	switch {
	case revision != "" && repo.Revision != "" && revision != repo.Revision:
		fmt.Fprintf(stderr, "goaccel download: %s and --revision %s name two revisions: give one\n", fs.Arg(0), revision)
		return 2
	case revision != "":
		repo.Revision = revision
	}
	c, err := hub.New(hub.Options{CacheDir: cacheDir, Token: token, Progress: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "goaccel download: %v\n", err)
		return 1
	}
	filter := hub.Filter{Include: include, Exclude: exclude}
	if files := fs.Args()[1:]; len(files) > 0 {
		filter.Choose = func(list []hub.Entry) ([]hub.Entry, error) { return named(list, files) }
	}
	dir, err := c.Snapshot(context.Background(), repo, filter)
	if err != nil {
		fmt.Fprintf(stderr, "goaccel download: %v\n", err)
		return 1
	}
	if localDir != "" {
		if err := copyTree(dir, localDir); err != nil {
			fmt.Fprintf(stderr, "goaccel download: --local_dir %s: %v\n", localDir, err)
			return 1
		}
		dir = localDir
	}
	fmt.Fprintln(stdout, dir)
	return 0
}

// named keeps the files of list that were named, refusing a name the repository lacks.
func named(list []hub.Entry, names []string) ([]hub.Entry, error) {
	byPath := map[string]hub.Entry{}
	for _, e := range list {
		byPath[e.Path] = e
	}
	var out []hub.Entry
	for _, n := range names {
		e, ok := byPath[n]
		if !ok {
			return nil, fmt.Errorf("%s: not in the repository's files (after --include/--exclude): %w", n, hub.ErrEntryNotFound)
		}
		out = append(out, e)
	}
	return out, nil
}

// copyTree copies the files under src (following the snapshot's symlinks) into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			return errors.New("a path outside the snapshot")
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		tmp := target + ".incomplete"
		out, err := os.Create(tmp)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			os.Remove(tmp)
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
		return os.Rename(tmp, target)
	})
}
