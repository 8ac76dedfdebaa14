package hub

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// refPath is the ref file of repo's revision.
func (c *Client) refPath(repo Repo) string {
	return filepath.Join(c.cache, repo.Folder(), "refs", filepath.FromSlash(repo.revision()))
}

// cachedCommit is the commit repo's revision names in the cache: the revision itself when it
// is a commit hash, else the content of refs/<revision>; "" when the cache does not know it.
func (c *Client) cachedCommit(repo Repo) string {
	rev := repo.revision()
	if commitHash.MatchString(rev) {
		return rev
	}
	b, err := os.ReadFile(c.refPath(repo))
	if err != nil {
		return ""
	}
	// huggingface_hub writes the 40-hex commit and reads back whatever the file holds; any
	// single folder name is taken here (trimmed), nothing that would leave snapshots/.
	commit := strings.TrimSpace(string(b))
	if commit == "" || commit == "." || commit == ".." || strings.ContainsAny(commit, "/\\\x00") {
		return ""
	}
	return commit
}

// cachedFile finds name at repo's revision in the cache alone (file_download.py's
// try_to_load_from_cache): ErrEntryNotFound when .no_exist/ records that the revision lacks
// it, ErrNotCached naming what was looked for, and an error naming a dangling symlink (its
// blob gone) rather than reading it as an empty file.
func (c *Client) cachedFile(repo Repo, name string) (string, error) {
	storage := filepath.Join(c.cache, repo.Folder())
	commit := c.cachedCommit(repo)
	if commit == "" {
		return "", fmt.Errorf("hub: %s: %s: %s names no commit: %w", repo, name, c.refPath(repo), ErrNotCached)
	}
	if p, err := c.pointerPath(storage, commit, name, ".no_exist"); err == nil && fileOK(p) {
		return "", fmt.Errorf("hub: %s: %s: the repository lacks it at commit %s (recorded in %s): %w", repo, name, commit, p, ErrEntryNotFound)
	}
	p, err := c.pointerPath(storage, commit, name, "snapshots")
	if err != nil {
		return "", err
	}
	st, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("hub: %s: %s: %s does not exist: %w", repo, name, p, ErrNotCached)
	case err != nil:
		return "", fmt.Errorf("hub: %w", err)
	}
	if st.Mode()&fs.ModeSymlink != 0 && !fileOK(p) {
		target, _ := os.Readlink(p)
		return "", fmt.Errorf("hub: %s: %s: %s is a dangling symlink (to %s: its blob is gone; download it again to repair it): %w",
			repo, name, p, target, ErrNotCached)
	}
	if !fileOK(p) {
		return "", fmt.Errorf("hub: %s: %s: %s is not a file: %w", repo, name, p, ErrNotCached)
	}
	return p, nil
}

// Cached returns the cached path of name at repo's revision without any network call.
func (c *Client) Cached(repo Repo, name string) (string, error) {
	if err := repo.check(); err != nil {
		return "", err
	}
	if err := checkName(name); err != nil {
		return "", fmt.Errorf("hub: %s: %w", repo, err)
	}
	return c.cachedFile(repo, name)
}

// cachedSnapshot is the snapshot folder of repo's revision when the cache has one.
func (c *Client) cachedSnapshot(repo Repo) (string, error) {
	commit := c.cachedCommit(repo)
	if commit == "" {
		return "", fmt.Errorf("hub: %s: %s names no commit: %w", repo, c.refPath(repo), ErrNotCached)
	}
	dir := filepath.Join(c.cache, repo.Folder(), "snapshots", commit)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("hub: %s: %s does not exist: %w", repo, dir, ErrNotCached)
	}
	return dir, nil
}
