package auto

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
)

// hubID is what a Hub model id looks like: "name" or "org/name", each part letters, digits,
// '.', '_' and '-' (not starting with '.' or '-'), optionally "@revision" (a branch, a tag or
// a commit hash).
var hubID = regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9._-]*(?:/[A-Za-z0-9_][A-Za-z0-9._-]*)?)(?:@([A-Za-z0-9._/-]+))?$`)

// Resolve returns the folder that nameOrDir names: nameOrDir itself when it is a folder;
// else, when it reads as a Hub id ("answerdotai/ModernBERT-base", optionally
// "@revision"), that model's snapshot in the local Hugging Face cache, found without
// network as transformers finds it offline:
//
//	<cache>/models--answerdotai--ModernBERT-base/refs/main          holds the commit hash H
//	<cache>/models--answerdotai--ModernBERT-base/snapshots/H/       the folder returned
//
// where <cache> is $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
// else ~/.cache/huggingface/hub (huggingface_hub's order). A revision is a name in refs/
// (a branch or tag) or a commit hash in snapshots/. When the model is not there, the error
// names every path tried and the command that downloads it.
func Resolve(nameOrDir string) (string, error) {
	if nameOrDir == "" {
		return "", errors.New("auto: no model named (give a folder or a Hub id such as answerdotai/ModernBERT-base)")
	}
	st, err := os.Stat(nameOrDir)
	switch {
	case err == nil && st.IsDir():
		return nameOrDir, nil
	case err == nil:
		return "", fmt.Errorf("auto: %s is a file: give the model's folder (the one holding config.json)", nameOrDir)
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("auto: %w", err)
	}
	m := hubID.FindStringSubmatch(nameOrDir)
	if m == nil || strings.Contains(nameOrDir, "..") {
		return "", fmt.Errorf("auto: %s: no such folder (and not a Hub id such as org/name)", nameOrDir)
	}
	id, revision := m[1], m[2]
	if revision == "" {
		revision = "main"
	}
	cache, from, err := hubCache()
	if err != nil {
		return "", fmt.Errorf("auto: %s: no such folder, and the Hugging Face cache is not known: %w", nameOrDir, err)
	}
	repo := filepath.Join(cache, "models--"+strings.ReplaceAll(id, "/", "--"))
	snapshot, tried := findSnapshot(repo, revision)
	if snapshot == "" {
		return "", fmt.Errorf("auto: %s: no such folder, and not in the Hugging Face cache (%s, from %s): tried %s; "+
			"download it on a machine with network with `hf download %s%s` (huggingface_hub; or "+
			"huggingface-cli download), or set HF_HUB_CACHE or HF_HOME to the cache that has it",
			nameOrDir, cache, from, strings.Join(tried, ", "), id, revisionFlag(m[2]))
	}
	if _, err := os.Stat(filepath.Join(snapshot, "config.json")); err != nil {
		return "", fmt.Errorf("auto: %s: the cached snapshot %s has no config.json (an incomplete download? "+
			"download it again with `hf download %s%s`)", nameOrDir, snapshot, id, revisionFlag(m[2]))
	}
	return snapshot, nil
}

// revisionFlag is the download command's option for a revision that was asked for.
func revisionFlag(revision string) string {
	if revision == "" {
		return ""
	}
	return " --revision " + revision
}

// findSnapshot returns the snapshot folder of revision in a cached model's folder, or ""
// and the paths it tried.
func findSnapshot(repo, revision string) (string, []string) {
	ref := filepath.Join(repo, "refs", filepath.FromSlash(revision))
	tried := []string{ref}
	if slices.Contains(strings.Split(revision, "/"), "..") { // a revision never leaves refs/ or snapshots/
		return "", tried
	}
	if b, err := os.ReadFile(ref); err == nil {
		hash := strings.TrimSpace(string(b))
		dir := filepath.Join(repo, "snapshots", hash)
		if hash != "" && hash != "." && hash != ".." && !strings.ContainsAny(hash, `/\`) && isDir(dir) {
			return dir, tried
		}
		tried[0] += " (names " + hash + ")"
		tried = append(tried, dir)
		return "", tried
	}
	dir := filepath.Join(repo, "snapshots", revision) // a commit hash given as the revision
	tried = append(tried, dir)
	if !strings.Contains(revision, "/") && isDir(dir) {
		return dir, tried
	}
	return "", tried
}

// hubCache returns the Hugging Face hub cache folder and the variable (or default) that
// chose it, in huggingface_hub's order.
func hubCache() (dir, from string, err error) {
	if v := envvar.HFHubCache.Value(); v != "" {
		return v, envvar.HFHubCache.Name, nil
	}
	if v := envvar.HFHome.Value(); v != "" {
		return filepath.Join(v, "hub"), envvar.HFHome.Name + "/hub", nil
	}
	if v := envvar.XDGCacheHome.Value(); v != "" {
		return filepath.Join(v, "huggingface", "hub"), envvar.XDGCacheHome.Name + "/huggingface/hub", nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", "", err
	}
	return filepath.Join(home, ".cache", "huggingface", "hub"), "the default", nil
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
