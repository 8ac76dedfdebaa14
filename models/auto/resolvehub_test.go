package auto

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/hub"
	"github.com/goaccel/goaccel/hub/hubtest"
	"github.com/goaccel/goaccel/internal/testutil"
)

// hubEnv points the process at a Hub stand-in and a fresh cache, online.
func hubEnv(t *testing.T) (*hubtest.Server, string) {
	t.Helper()
	s := hubtest.NewServer()
	t.Cleanup(s.Close)
	return s, s.Setenv(t)
}

func folderFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// TestHubIDDownloadsWhatTheFamilyReads: a Hub id not in the cache is downloaded from the Hub
// (the stand-in) with only the files goaccel reads, loads, and then resolves offline with no
// request at all.
func TestHubIDDownloadsWhatTheFamilyReads(t *testing.T) {
	s, cache := hubEnv(t)
	files := folderFiles(t, modernBERTFolder(t))
	files["README.md"] = []byte("# tiny\n")
	files["pytorch_model.bin"] = []byte("not read")
	files["onnx/model.onnx"] = []byte("not read")
	commit := s.Commit("model", "org/mb", files)
	dir, err := Resolve("org/mb")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "models--org--mb", "snapshots", commit); dir != want {
		t.Errorf("Resolve = %s, want %s", dir, want)
	}
	var got []string
	for _, r := range s.Requests() {
		if r.Method == "HEAD" {
			got = append(got, r.Path[strings.Index(r.Path, "/resolve/")+len("/resolve/")+len(commit)+1:]) // at the commit
		}
	}
	for _, n := range got {
		if n == "README.md" || n == "pytorch_model.bin" || strings.HasPrefix(n, "onnx") {
			t.Errorf("fetched %s, which goaccel does not read", n)
		}
	}
	if !slices.Contains(got, "model.safetensors") || !slices.Contains(got, "vocab.txt") {
		t.Errorf("fetched %v", got)
	}
	m, err := Load("org/mb", nil, Options{MaxLen: 12})
	if err != nil || m.Family != "modernbert" {
		t.Fatalf("Load: %v", err)
	}
	t.Setenv("HF_HUB_OFFLINE", "1")
	n := len(s.Requests())
	if again, err := Resolve("org/mb"); err != nil || again != dir {
		t.Errorf("offline: %s %v", again, err)
	}
	if len(s.Requests()) != n {
		t.Errorf("offline Resolve made %d requests", len(s.Requests())-n)
	}
}

// TestHubIDOnlyPyTorchWeightsRefusedBeforeDownloading: a repository whose weights are only
// pytorch_model.bin is refused, naming it and what goaccel reads, before any file is fetched.
func TestHubIDOnlyPyTorchWeightsRefusedBeforeDownloading(t *testing.T) {
	s, _ := hubEnv(t)
	s.Commit("model", "org/old", map[string][]byte{"config.json": []byte(`{"model_type":"bert"}`), "pytorch_model.bin": []byte("x"), "vocab.txt": []byte("a\n")})
	_, err := Resolve("org/old")
	if err == nil || !strings.Contains(err.Error(), "pytorch_model.bin") || !strings.Contains(err.Error(), "model.safetensors") {
		t.Fatalf("err = %v", err)
	}
	t.Logf("%v", err)
	for _, r := range s.Requests() {
		if strings.Contains(r.Path, "/resolve/") {
			t.Errorf("fetched %s before refusing", r.Path)
		}
	}
}

// TestHubIDRevisionAndOptions: --model_revision (SetHubOptions) picks a tag; an "@revision"
// that differs from it is an error; --cache_dir and --token reach the client.
func TestHubIDRevisionAndOptions(t *testing.T) {
	s, _ := hubEnv(t)
	files := folderFiles(t, modernBERTFolder(t))
	first := s.Commit("model", "org/mb", files)
	s.Ref("model", "org/mb", "v1", first)
	files["extra.txt"] = []byte("x")
	s.Commit("model", "org/mb", files)
	s.Token("hf_tok")
	s.Protect("model", "org/mb", hubtest.Private, "hf_tok")
	cache := t.TempDir()
	SetHubOptions(HubOptions{Revision: "v1", CacheDir: cache, Token: "hf_tok"})
	defer SetHubOptions(HubOptions{})
	dir, err := Resolve("org/mb")
	if err != nil || dir != filepath.Join(cache, "models--org--mb", "snapshots", first) {
		t.Fatalf("Resolve with --model_revision v1: %s %v", dir, err)
	}
	if _, err := Resolve("org/mb@main"); err == nil || !strings.Contains(err.Error(), "--model_revision v1") {
		t.Errorf("two revisions: %v", err)
	}
	SetHubOptions(HubOptions{CacheDir: cache})
	if _, err := Resolve("org/other"); !errors.Is(err, hub.ErrRepoNotFound) {
		t.Errorf("a repository the Hub does not know: %v", err)
	}
}

func TestModelFilesShards(t *testing.T) {
	var list []hub.Entry
	for _, n := range []string{"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
		"model-00002-of-00002.safetensors", "tokenizer.json", "README.md", "pytorch_model.bin"} {
		list = append(list, hub.Entry{Path: n})
	}
	got, err := modelFiles("org/x", list)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range got {
		names = append(names, e.Path)
	}
	if s := strings.Join(names, ","); s != "config.json,model.safetensors.index.json,model-00001-of-00002.safetensors,model-00002-of-00002.safetensors,tokenizer.json" {
		t.Errorf("chosen %s", s)
	}
	if _, err := modelFiles("org/x", list[4:6]); err == nil || !strings.Contains(err.Error(), "README.md") {
		t.Errorf("no weights: %v", err)
	}
}

// TestHubCacheSharedWithTransformers: transformers loads offline, by its Hub id, a model goaccel
// downloaded from the stand-in; goaccel loads offline one huggingface_hub downloaded.
func TestHubCacheSharedWithTransformers(t *testing.T) {
	testutil.Long(t, "runs transformers")
	py := testutil.TorchPython(t, "transformers loading what goaccel downloaded")
	s, cache := hubEnv(t)
	folder := modernBERTFolder(t)
	s.Commit("model", "org/mb", folderFiles(t, folder))
	if _, err := Resolve("org/mb"); err != nil {
		t.Fatal(err)
	}
	script := `
import sys, json, torch
from transformers import AutoModel
a = AutoModel.from_pretrained("org/mb")
b = AutoModel.from_pretrained(sys.argv[1])
print(json.dumps({"params": sum(p.numel() for p in a.parameters()),
                  "same": all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))}))`
	var got struct {
		Params int  `json:"params"`
		Same   bool `json:"same"`
	}
	cmd := exec.Command(py, "-c", script, folder)
	cmd.Env = append(pythonEnv(), "HF_HUB_OFFLINE=1", "HF_HUB_CACHE="+cache)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("transformers: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil || !got.Same || got.Params == 0 {
		t.Errorf("transformers from goaccel's download: %s (%v)", out, err)
	}

	// The other way: huggingface_hub downloads, goaccel reads it offline.
	other := t.TempDir()
	cmd = exec.Command(py, "-c", `from huggingface_hub import snapshot_download; print(snapshot_download("org/mb"))`)
	cmd.Env = append(pythonEnv(), "HF_ENDPOINT="+s.URL, "HF_HUB_CACHE="+other, "HF_HUB_DISABLE_XET=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("huggingface_hub: %v\n%s", err, out)
	}
	t.Setenv("HF_HUB_CACHE", other)
	t.Setenv("HF_HUB_OFFLINE", "1")
	m, err := Load("org/mb", nil, Options{MaxLen: 12})
	if err != nil || m.Family != "modernbert" {
		t.Fatalf("goaccel offline from huggingface_hub's download: %v", err)
	}
}

// pythonEnv is this process's environment without the empty Hugging Face variables the tests
// set (huggingface_hub reads an empty timeout as a bad number).
func pythonEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); v != "" || !(strings.HasPrefix(k, "HF_") || strings.HasPrefix(k, "HUGGING") || k == "TRANSFORMERS_OFFLINE") {
			env = append(env, kv)
		}
	}
	return env
}
