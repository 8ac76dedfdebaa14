package hub_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
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

// pyHub runs a huggingface_hub script with the stand-in as HF_ENDPOINT and cache as
// HF_HUB_CACHE (offline when asked), returning its last output line.
func pyHub(t *testing.T, py, endpoint, cache string, offline bool, script string) string {
	t.Helper()
	cmd := exec.Command(py, "-c", script)
	for _, kv := range os.Environ() { // clean's empty values are not huggingface_hub's unset
		if k, v, _ := strings.Cut(kv, "="); v != "" || !(strings.HasPrefix(k, "HF_") || strings.HasPrefix(k, "HUGGING") || k == "TRANSFORMERS_OFFLINE") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HF_ENDPOINT="+endpoint, "HF_HUB_CACHE="+cache, "HF_HUB_DISABLE_TELEMETRY=1",
		"HF_HUB_DISABLE_PROGRESS_BARS=1", "HF_HUB_DISABLE_XET=1")
	if offline {
		cmd.Env = append(cmd.Env, "HF_HUB_OFFLINE=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("huggingface_hub: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// layout lists a cache: every path under it (but .locks/) with what it is, a symlink's
// target, a file's sha256.
func layout(t *testing.T, cache string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(cache, p)
		if rel == ".locks" {
			return filepath.SkipDir
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, rel+" -> "+target)
		case d.IsDir():
			out = append(out, rel+"/")
		default:
			b, _ := os.ReadFile(p)
			s := sha256.Sum256(b)
			out = append(out, rel+" "+hex.EncodeToString(s[:]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestCacheSharedWithHuggingFaceHub: goaccel and huggingface_hub, pointed at the same
// stand-in, leave the same cache, file for file and link for link; each finds offline what
// the other downloaded, in one cache filled in turn.
func TestCacheSharedWithHuggingFaceHub(t *testing.T) {
	testutil.Long(t, "runs Python's huggingface_hub")
	py := testutil.Python(t, "huggingface_hub", "huggingface_hub (make deps installs it with transformers)")
	clean(t)
	s := hubtest.NewServer()
	defer s.Close()
	first := s.Commit("model", "org/tiny", map[string][]byte{"config.json": []byte(`{"model_type":"bert"}`),
		"model.safetensors": bytesOf(300_000, 1), "sub/vocab.txt": []byte("[PAD]\n")})
	s.Ref("model", "org/tiny", "v1", first)
	ctx := context.Background()
	t.Log(pyHub(t, py, s.URL, t.TempDir(), false, "import huggingface_hub; print(huggingface_hub.__version__)"))

	// The same downloads, each tool in its own cache: the same layout.
	goCache, pyCache := t.TempDir(), t.TempDir()
	c, err := hub.New(hub.Options{Endpoint: s.URL, CacheDir: goCache})
	if err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"main", "v1"} {
		if _, err := c.Snapshot(ctx, hub.Repo{ID: "org/tiny", Revision: rev}, hub.Filter{}); err != nil {
			t.Fatal(err)
		}
		pyHub(t, py, s.URL, pyCache, false, `from huggingface_hub import snapshot_download; print(snapshot_download("org/tiny", revision="`+rev+`"))`)
	}
	if _, err := c.Download(ctx, hub.Repo{ID: "org/tiny"}, "missing.json"); err == nil {
		t.Fatal("a missing file was found")
	}
	pyHub(t, py, s.URL, pyCache, false, `
from huggingface_hub import hf_hub_download
try:
    hf_hub_download("org/tiny", "missing.json")
except Exception as e:
    print(type(e).__name__)`)
	if g, p := layout(t, goCache), layout(t, pyCache); !slices.Equal(g, p) {
		t.Errorf("goaccel's cache:\n%s\nhuggingface_hub's:\n%s", strings.Join(g, "\n"), strings.Join(p, "\n"))
	}

	// One cache in turn: goaccel downloads the config, huggingface_hub the rest; each then finds
	// all three offline.
	shared := t.TempDir()
	c, _ = hub.New(hub.Options{Endpoint: s.URL, CacheDir: shared})
	if _, err := c.Download(ctx, hub.Repo{ID: "org/tiny"}, "config.json"); err != nil {
		t.Fatal(err)
	}
	pyHub(t, py, s.URL, shared, false, `
from huggingface_hub import hf_hub_download
for f in ["model.safetensors", "sub/vocab.txt"]:
    print(hf_hub_download("org/tiny", f))`)
	var found map[string]string
	out := pyHub(t, py, s.URL, shared, true, `
import json, hashlib
from huggingface_hub import hf_hub_download, snapshot_download
d = {f: hashlib.sha256(open(hf_hub_download("org/tiny", f, local_files_only=True), "rb").read()).hexdigest()
     for f in ["config.json", "model.safetensors", "sub/vocab.txt"]}
d["snapshot"] = snapshot_download("org/tiny", local_files_only=True)
print(json.dumps(d))`)
	if err := json.Unmarshal([]byte(out), &found); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	off, _ := hub.New(hub.Options{CacheDir: shared, Offline: true})
	for _, f := range []string{"config.json", "model.safetensors", "sub/vocab.txt"} {
		p, err := off.Download(ctx, hub.Repo{ID: "org/tiny"}, f)
		if err != nil {
			t.Fatalf("goaccel offline, %s: %v", f, err)
		}
		b, _ := os.ReadFile(p)
		if found[f] != sha(b) {
			t.Errorf("%s: huggingface_hub read sha256 %s, goaccel %s", f, found[f], sha(b))
		}
	}
	if dir, err := off.Snapshot(ctx, hub.Repo{ID: "org/tiny"}, hub.Filter{}); err != nil || dir != found["snapshot"] {
		t.Errorf("snapshot: goaccel %s (%v), huggingface_hub %s", dir, err, found["snapshot"])
	}
}
