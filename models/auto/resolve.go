package auto

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/goaccel/goaccel/hub"
)

// hubID is what a Hub model id looks like: "name" or "org/name", each part letters, digits,
// '.', '_' and '-' (not starting with '.' or '-'), optionally "@revision" (a branch, a tag or
// a commit hash).
var hubID = regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9._-]*(?:/[A-Za-z0-9_][A-Za-z0-9._-]*)?)(?:@([A-Za-z0-9._/-]+))?$`)

// HubOptions are how Resolve fetches a Hub id: the revision (a model id's "@revision" wins
// when it names the same one; two different ones are an error), the hub cache folder, the
// token, where the progress bars go. Empty fields take the environment's values (package hub:
// HF_HUB_CACHE, HF_TOKEN, HF_HUB_OFFLINE, HF_ENDPOINT...).
type HubOptions struct {
	Revision string // --model_revision
	CacheDir string // --cache_dir
	Token    string // --token
	// Progress receives a progress bar per downloaded file; nil: none.
	Progress io.Writer
}

var (
	hubMu       sync.Mutex
	hubSettings HubOptions
)

// SetHubOptions sets the process's HubOptions, which Resolve (and so Load, Inspect, NewBlank)
// uses; trainer/args sets them from --model_revision, --cache_dir and --token.
func SetHubOptions(o HubOptions) {
	hubMu.Lock()
	defer hubMu.Unlock()
	hubSettings = o
}

func hubOptions() HubOptions {
	hubMu.Lock()
	defer hubMu.Unlock()
	return hubSettings
}

// Resolve returns the folder that nameOrDir names: nameOrDir itself when it is a folder;
// else, when it reads as a Hub id ("answerdotai/ModernBERT-base", optionally "@revision"),
// that model's snapshot in the Hugging Face cache (the one huggingface_hub and transformers
// share), downloading what the cache lacks of the files goaccel reads, as from_pretrained
// does: config.json, model.safetensors (or model.safetensors.index.json and its
// model-NNNNN-of-NNNNN.safetensors shards), the tokenizer's and the processor's files. A
// repository whose weights are only in another format (pytorch_model.bin...) is refused
// before anything is downloaded. Offline (HF_HUB_OFFLINE) or when the Hub cannot be reached,
// the cached snapshot answers alone; when there is none, the error names the paths tried and
// the commands that download it. The process's HubOptions (SetHubOptions) apply.
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
	o := hubOptions()
	id, revision := m[1], m[2]
	switch {
	case revision == "":
		revision = o.Revision
	case o.Revision != "" && o.Revision != revision:
		return "", fmt.Errorf("auto: %s names revision %s, and --model_revision %s another: give one", nameOrDir, revision, o.Revision)
	}
	client, err := hub.New(hub.Options{CacheDir: o.CacheDir, Token: o.Token, Progress: o.Progress})
	if err != nil {
		return "", fmt.Errorf("auto: %s: %w", nameOrDir, err)
	}
	repo := hub.Repo{ID: id, Type: hub.Model, Revision: revision}
	snapshot, err := client.Snapshot(context.Background(), repo, hub.Filter{Choose: func(files []hub.Entry) ([]hub.Entry, error) {
		return modelFiles(nameOrDir, files)
	}})
	if errors.Is(err, hub.ErrNotCached) || hub.Unreachable(err) {
		folder := filepath.Join(client.CacheDir(), repo.Folder())
		_, tried := findSnapshot(folder, cmp.Or(revision, "main"))
		how := "the Hub could not be reached"
		if client.Offline() {
			how = "offline"
		}
		return "", fmt.Errorf("auto: %s: no such folder, and not in the Hugging Face cache (%s; %s): tried %s; "+
			"download it on a machine with network with `goaccel download %s%s` (or huggingface_hub's `hf download %s%s`), "+
			"or set HF_HUB_CACHE or HF_HOME to the cache that has it: %w",
			nameOrDir, client.CacheDir(), how, strings.Join(tried, ", "), id, revisionFlag(revision), id, revisionFlag(revision), err)
	}
	if err != nil {
		return "", fmt.Errorf("auto: %s: %w", nameOrDir, err)
	}
	if _, err := os.Stat(filepath.Join(snapshot, "config.json")); err != nil {
		return "", fmt.Errorf("auto: %s: the cached snapshot %s has no config.json (an incomplete download? "+
			"download it again with `goaccel download %s%s`)", nameOrDir, snapshot, id, revisionFlag(revision))
	}
	return snapshot, nil
}

// errRefused marks a repository refused for what it holds.
var errRefused = errors.New("the repository holds no model goaccel reads")

// modelFileNames are the files Resolve downloads besides the weights: the configuration, the
// tokenizer's files (tokenizerFiles) and the image processor's.
var modelFileNames = append([]string{"config.json", ImageProcessorFile}, tokenizerFiles...)

// shard is a safetensors shard's name as transformers' save_pretrained writes it.
var shard = regexp.MustCompile(`^model-[0-9]+-of-[0-9]+\.safetensors$`)

// modelFiles picks the files goaccel reads from a repository's list, refusing (before any
// download) one without config.json or without safetensors weights.
func modelFiles(name string, files []hub.Entry) ([]hub.Entry, error) {
	have := map[string]bool{}
	var names []string
	for _, f := range files {
		have[f.Path] = true
		names = append(names, f.Path)
	}
	want := map[string]bool{}
	for _, n := range modelFileNames {
		want[n] = have[n]
	}
	switch {
	case have["model.safetensors"]:
		want["model.safetensors"] = true
	case have["model.safetensors.index.json"]:
		want["model.safetensors.index.json"] = true
		for _, f := range files {
			if shard.MatchString(f.Path) {
				want[f.Path] = true
			}
		}
	default:
		var other []string
		for _, n := range []string{"pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack", "model.ckpt.index"} {
			if have[n] {
				other = append(other, n)
			}
		}
		if len(other) > 0 {
			return nil, fmt.Errorf("%s has its weights only as %s; goaccel reads model.safetensors (or model.safetensors.index.json "+
				"with its shards): nothing was downloaded. Look for a revision with safetensors (the Hub's conversion bot "+
				"opens refs/pr/N: --model_revision refs/pr/N), or convert it once with transformers' "+
				"save_pretrained(..., safe_serialization=True): %w", name, strings.Join(other, ", "), errRefused)
		}
		return nil, fmt.Errorf("%s has no model.safetensors nor model.safetensors.index.json (its files: %s): %w",
			name, strings.Join(names, ", "), errRefused)
	}
	if !have["config.json"] {
		return nil, fmt.Errorf("%s has no config.json (its files: %s): %w", name, strings.Join(names, ", "), errRefused)
	}
	var out []hub.Entry
	for _, f := range files {
		if want[f.Path] {
			out = append(out, f)
		}
	}
	return out, nil
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

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
