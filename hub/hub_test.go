package hub_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/hub"
	"github.com/goaccel/goaccel/hub/hubtest"
)

// clean unsets every variable the client reads, so that the machine's own do not leak in.
func clean(t *testing.T) {
	for _, v := range []string{"HF_ENDPOINT", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME",
		"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
		"HF_HUB_ETAG_TIMEOUT", "HF_HUB_DOWNLOAD_TIMEOUT"} {
		t.Setenv(v, "")
	}
	t.Setenv("HOME", t.TempDir())
}

func bytesOf(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

// setup is a stand-in with org/tiny (a config, a weights file served from the CDN, a file in
// a folder) and a client on a fresh cache.
func setup(t *testing.T, opts hub.Options) (*hubtest.Server, *hub.Client, string) {
	t.Helper()
	clean(t)
	s := hubtest.NewServer()
	t.Cleanup(s.Close)
	commit := s.Commit("model", "org/tiny", map[string][]byte{
		"config.json":       []byte(`{"model_type":"bert"}`),
		"model.safetensors": bytesOf(300_000, 1),
		"sub/vocab.txt":     []byte("[PAD]\n[UNK]\n"),
	})
	if opts.Endpoint == "" {
		opts.Endpoint = s.URL
	}
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	c, err := hub.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, c, commit
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestDownloadLayoutIsHuggingFaceHubs(t *testing.T) {
	s, c, commit := setup(t, hub.Options{})
	ctx := context.Background()
	repo := hub.Repo{ID: "org/tiny"}
	weights, err := c.Download(ctx, repo, "model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(c.CacheDir(), "models--org--tiny")
	if want := filepath.Join(storage, "snapshots", commit, "model.safetensors"); weights != want {
		t.Errorf("path %s, want %s", weights, want)
	}
	sum := sha(bytesOf(300_000, 1))
	if target, err := os.Readlink(weights); err != nil || target != "../../blobs/"+sum {
		t.Errorf("the snapshot entry links to %q (%v), want the relative ../../blobs/%s", target, err, sum)
	}
	vocab, err := c.Download(ctx, repo, "sub/vocab.txt")
	if err != nil {
		t.Fatal(err)
	}
	if target, _ := os.Readlink(vocab); !strings.HasPrefix(target, "../../../blobs/") {
		t.Errorf("a file in a folder links to %q, want ../../../blobs/<etag>", target)
	}
	if b, err := os.ReadFile(vocab); err != nil || string(b) != "[PAD]\n[UNK]\n" {
		t.Errorf("vocab %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(storage, "refs", "main")); err != nil || string(b) != commit {
		t.Errorf("refs/main holds %q (%v), want the commit without a newline", b, err)
	}
	if _, err := os.Stat(filepath.Join(c.CacheDir(), ".locks", "models--org--tiny", sum+".lock")); err != nil {
		t.Errorf("lock file: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(c.CacheDir(), "CACHEDIR.TAG")); err != nil || !strings.HasPrefix(string(b), "Signature: 8a477f597d28d172789f06886806bc55") {
		t.Errorf("CACHEDIR.TAG %q %v", b, err)
	}
	for _, r := range s.Requests() {
		if r.Server == "cdn" && r.Method == "HEAD" {
			t.Errorf("metadata followed the redirect to the CDN: %+v", r)
		}
	}
	// A second call is answered by the cache after one HEAD, with no bytes.
	before := s.BytesSent()
	if _, err := c.Download(ctx, repo, "model.safetensors"); err != nil {
		t.Fatal(err)
	}
	if got := s.BytesSent() - before; got != 0 {
		t.Errorf("a cached file fetched %d bytes again", got)
	}
}

func TestTokenReachesTheHubOnly(t *testing.T) {
	const token = "hf_secret_value_123"
	s, c, _ := setup(t, hub.Options{Token: token})
	s.Token(token)
	s.Protect("model", "org/tiny", hubtest.Private, token)
	if _, err := c.Download(context.Background(), hub.Repo{ID: "org/tiny"}, "model.safetensors"); err != nil {
		t.Fatal(err)
	}
	var hubAuth, cdn int
	for _, r := range s.Requests() {
		switch {
		case r.Server == "cdn" && r.Auth:
			t.Errorf("the token went to the CDN: %+v", r)
		case r.Server == "cdn":
			cdn++
		case r.Auth:
			hubAuth++
		}
	}
	if hubAuth == 0 || cdn == 0 {
		t.Errorf("requests with the token to the Hub %d, to the CDN %d: want both > 0", hubAuth, cdn)
	}
	if got := fmt.Sprintf("%v %+v %#v", c, c, c); strings.Contains(got, token) {
		t.Errorf("printing the client shows the token: %s", got)
	}
	// An error holds no token.
	_, err := c.Download(context.Background(), hub.Repo{ID: "org/tiny", Revision: "nope"}, "config.json")
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("error %v", err)
	}
}

func TestTokenFromTheEnvironmentInHuggingFaceHubsOrder(t *testing.T) {
	clean(t)
	s := hubtest.NewServer()
	defer s.Close()
	s.Commit("model", "org/p", map[string][]byte{"config.json": []byte("{}")})
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "token"), []byte("tok-file-home\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(other, []byte("tok-file-path"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HF_HOME": home}, "tok-file-home"},
		{map[string]string{"HF_HOME": home, "HF_TOKEN_PATH": other}, "tok-file-path"},
		{map[string]string{"HF_HOME": home, "HUGGING_FACE_HUB_TOKEN": "tok-old"}, "tok-old"},
		{map[string]string{"HF_HOME": home, "HUGGING_FACE_HUB_TOKEN": "tok-old", "HF_TOKEN": "tok-new"}, "tok-new"},
	} {
		clean(t)
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		s.Token(c.want)
		s.Protect("model", "org/p", hubtest.Private, c.want)
		cl, err := hub.New(hub.Options{Endpoint: s.URL, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Download(context.Background(), hub.Repo{ID: "org/p"}, "config.json"); err != nil {
			t.Errorf("%v: %v", c.env, err)
		}
	}
}

func TestCacheFolderInHuggingFaceHubsOrder(t *testing.T) {
	clean(t)
	home := os.Getenv("HOME")
	check := func(want string, env ...string) {
		t.Helper()
		clean(t)
		t.Setenv("HOME", home)
		for i := 0; i < len(env); i += 2 {
			t.Setenv(env[i], env[i+1])
		}
		c, err := hub.New(hub.Options{Endpoint: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		if c.CacheDir() != want {
			t.Errorf("%v: cache %s, want %s", env, c.CacheDir(), want)
		}
	}
	check(filepath.Join(home, ".cache", "huggingface", "hub"))
	check("/x/huggingface/hub", "XDG_CACHE_HOME", "/x")
	check("/h/hub", "XDG_CACHE_HOME", "/x", "HF_HOME", "/h")
	check("/old", "HF_HOME", "/h", "HUGGINGFACE_HUB_CACHE", "/old")
	check("/new", "HF_HOME", "/h", "HUGGINGFACE_HUB_CACHE", "/old", "HF_HUB_CACHE", "/new")
	check(filepath.Join(home, "c"), "HF_HUB_CACHE", "~/c")
	t.Setenv("HF_HUB_CACHE", "/new")
	if c, _ := hub.New(hub.Options{Endpoint: "http://127.0.0.1:1", CacheDir: "/given"}); c.CacheDir() != "/given" {
		t.Errorf("an explicit cache folder: %s", c.CacheDir())
	}
}

func TestBadVariablesAreErrorsNamingThem(t *testing.T) {
	for name, value := range map[string]string{"HF_HUB_OFFLINE": "maybe", "HF_HUB_ETAG_TIMEOUT": "ten",
		"HF_HUB_DOWNLOAD_TIMEOUT": "-1", "HF_ENDPOINT": "ftp://x"} {
		clean(t)
		t.Setenv(name, value)
		if _, err := hub.New(hub.Options{}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: error %v, want one naming the variable", name, value, err)
		}
	}
}

func TestRevisionsBranchTagCommit(t *testing.T) {
	s, c, first := setup(t, hub.Options{})
	ctx := context.Background()
	s.Ref("model", "org/tiny", "v1", first)
	second := s.Commit("model", "org/tiny", map[string][]byte{"config.json": []byte(`{"model_type":"bert","v":2}`)})
	s.Ref("model", "org/tiny", "refs/convert/parquet", first)
	for rev, want := range map[string]string{"": second, "main": second, "v1": first, first: first, "refs/convert/parquet": first} {
		r, err := hub.ParseRepo("org/tiny@"+rev, hub.Model)
		if rev == "" {
			r, err = hub.ParseRepo("org/tiny", hub.Model)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Revision(ctx, r)
		if err != nil || got != want {
			t.Errorf("revision %q: %s %v, want %s", rev, got, err, want)
		}
		p, err := c.Download(ctx, r, "config.json")
		if err != nil || !strings.Contains(p, want) {
			t.Errorf("download at %q: %s %v", rev, p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(c.CacheDir(), "models--org--tiny", "refs", "v1")); string(b) != first {
		t.Errorf("refs/v1 %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(c.CacheDir(), "models--org--tiny", "refs", "refs", "convert", "parquet")); string(b) != first {
		t.Errorf("refs/refs/convert/parquet %q", b)
	}
	if _, err := hub.ParseRepo("org/tiny@../x", hub.Model); err == nil {
		t.Error("a revision with .. was taken")
	}
}

func TestFileListPagesAndRelativeRedirect(t *testing.T) {
	s, c, _ := setup(t, hub.Options{})
	s.PageSize = 2
	s.Rename("model", "old/tiny", "org/tiny")
	files, err := c.Files(context.Background(), hub.Repo{ID: "org/tiny"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Path)
	}
	if got := strings.Join(names, ","); got != "config.json,model.safetensors,sub/vocab.txt" {
		t.Errorf("files %s", got)
	}
	if files[1].LFS == nil || files[1].LFS.SHA256 != sha(bytesOf(300_000, 1)) || files[1].Size != 300_000 {
		t.Errorf("weights entry %+v", files[1])
	}
	p, err := c.Download(context.Background(), hub.Repo{ID: "old/tiny"}, "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p, "models--old--tiny") {
		t.Errorf("a renamed repository's file is cached under %s, want the name asked for (as huggingface_hub does)", p)
	}
}

func TestHubErrors(t *testing.T) {
	s, c, commit := setup(t, hub.Options{Token: "hf_user"})
	s.Token("hf_user")
	s.Commit("model", "org/gated", map[string][]byte{"config.json": []byte("{}")})
	s.Protect("model", "org/gated", hubtest.Gated, "hf_other")
	ctx := context.Background()
	for _, tc := range []struct {
		repo hub.Repo
		file string
		kind error
		text string
	}{
		{hub.Repo{ID: "org/none"}, "config.json", hub.ErrRepoNotFound, "RepoNotFound"},
		{hub.Repo{ID: "org/gated"}, "config.json", hub.ErrGated, "403 GatedRepo"},
		{hub.Repo{ID: "org/tiny", Revision: "v9"}, "config.json", hub.ErrRevisionNotFound, "Invalid rev id: v9"},
		{hub.Repo{ID: "org/tiny"}, "tokenizer.json", hub.ErrEntryNotFound, "EntryNotFound"},
	} {
		_, err := c.Download(ctx, tc.repo, tc.file)
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.text) || !strings.Contains(err.Error(), tc.repo.ID) {
			t.Errorf("%s %s: %v, want %v with %q", tc.repo, tc.file, err, tc.kind, tc.text)
		}
		t.Logf("%s %s: %v", tc.repo, tc.file, err)
	}
	noExist := filepath.Join(c.CacheDir(), "models--org--tiny", ".no_exist", commit, "tokenizer.json")
	if st, err := os.Stat(noExist); err != nil || st.Size() != 0 {
		t.Errorf(".no_exist entry: %v", err)
	}
	wrong, _ := hub.New(hub.Options{Endpoint: s.URL, CacheDir: c.CacheDir(), Token: "hf_wrong"})
	_, err := wrong.Download(ctx, hub.Repo{ID: "org/tiny"}, "config.json")
	if !errors.Is(err, hub.ErrBadToken) || strings.Contains(err.Error(), "hf_wrong") {
		t.Errorf("a wrong token: %v", err)
	}
	t.Logf("wrong token: %v", err)
	anon, _ := hub.New(hub.Options{Endpoint: s.URL, CacheDir: c.CacheDir()})
	if _, err := anon.Download(ctx, hub.Repo{ID: "org/gated"}, "config.json"); !errors.Is(err, hub.ErrGated) || !strings.Contains(err.Error(), "401") {
		t.Errorf("gated without a token: %v", err)
	}
	// Offline, .no_exist answers that the file is not in the repository.
	off, _ := hub.New(hub.Options{CacheDir: c.CacheDir(), Offline: true})
	if _, err := off.Download(ctx, hub.Repo{ID: "org/tiny"}, "tokenizer.json"); !errors.Is(err, hub.ErrEntryNotFound) {
		t.Errorf("offline, a file recorded as missing: %v", err)
	}
}

func TestOfflineMakesNoRequest(t *testing.T) {
	s, c, commit := setup(t, hub.Options{})
	ctx := context.Background()
	if _, err := c.Snapshot(ctx, hub.Repo{ID: "org/tiny"}, hub.Filter{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"} {
		t.Setenv("HF_HUB_OFFLINE", "")
		t.Setenv("TRANSFORMERS_OFFLINE", "")
		t.Setenv(name, "1")
		off, err := hub.New(hub.Options{Endpoint: s.URL, CacheDir: c.CacheDir()})
		if err != nil || !off.Offline() {
			t.Fatalf("%s=1: offline %v %v", name, off.Offline(), err)
		}
		n := len(s.Requests())
		p, err := off.Download(ctx, hub.Repo{ID: "org/tiny"}, "model.safetensors")
		if err != nil || !strings.Contains(p, commit) {
			t.Errorf("offline download: %s %v", p, err)
		}
		dir, err := off.Snapshot(ctx, hub.Repo{ID: "org/tiny"}, hub.Filter{})
		if err != nil || filepath.Base(dir) != commit {
			t.Errorf("offline snapshot: %s %v", dir, err)
		}
		_, err = off.Download(ctx, hub.Repo{ID: "org/other"}, "config.json")
		if !errors.Is(err, hub.ErrNotCached) || !strings.Contains(err.Error(), name) && !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
			t.Errorf("offline, not cached: %v", err)
		}
		if got := len(s.Requests()); got != n {
			t.Errorf("%s=1 made %d requests", name, got-n)
		}
	}
}

func TestNetworkFailureFallsBackToTheCache(t *testing.T) {
	s, c, commit := setup(t, hub.Options{})
	ctx := context.Background()
	if _, err := c.Download(ctx, hub.Repo{ID: "org/tiny"}, "config.json"); err != nil {
		t.Fatal(err)
	}
	s.Down(true)
	p, err := c.Download(ctx, hub.Repo{ID: "org/tiny"}, "config.json")
	if err != nil || !strings.Contains(p, commit) {
		t.Errorf("the Hub down, a cached file: %s %v", p, err)
	}
	if _, err := c.Snapshot(ctx, hub.Repo{ID: "org/tiny"}, hub.Filter{}); err != nil {
		t.Errorf("the Hub down, a cached snapshot: %v", err)
	}
	_, err = c.Download(ctx, hub.Repo{ID: "org/tiny"}, "sub/vocab.txt")
	if err == nil || !strings.Contains(err.Error(), "does not hold it") {
		t.Errorf("the Hub down, an uncached file: %v", err)
	}
}

func TestInterruptedDownloadResumes(t *testing.T) {
	s, c, _ := setup(t, hub.Options{})
	ctx := context.Background()
	size := int64(300_000)
	// Cut once half-way: the same call resumes with a Range request.
	s.Cut("model.safetensors", size/2, 1)
	p, err := c.Download(ctx, hub.Repo{ID: "org/tiny"}, "model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, bytesOf(int(size), 1)) {
		t.Fatal("resumed file differs")
	}
	var ranges []string
	for _, r := range s.Requests() {
		if r.Server == "cdn" {
			ranges = append(ranges, fmt.Sprintf("%q:%d", r.Range, r.Sent))
		}
	}
	if got, want := strings.Join(ranges, " "), fmt.Sprintf(`"":%d "bytes=%d-":%d`, size/2, size/2, size/2); got != want {
		t.Errorf("CDN requests %s, want %s", got, want)
	}

	// Cut every answer after 10000 bytes: the call gives up after 5 tries, keeping the
	// .incomplete file; the next call resumes from it.
	s2, c2, _ := setup(t, hub.Options{})
	s2.Cut("model.safetensors", 10_000, -1)
	_, err = c2.Download(ctx, hub.Repo{ID: "org/tiny"}, "model.safetensors")
	if err == nil || !strings.Contains(err.Error(), "50000 of 300000") {
		t.Fatalf("every answer cut: %v", err)
	}
	t.Logf("cut: %v", err)
	s2.Cut("model.safetensors", 0, 0)
	before := s2.BytesSent()
	p2, err := c2.Download(ctx, hub.Repo{ID: "org/tiny"}, "model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p2); !bytes.Equal(b, bytesOf(int(size), 1)) {
		t.Errorf("resumed file differs (%d bytes)", len(b))
	}
	for _, r := range s2.Requests() {
		t.Logf("%+v", r)
	}
	if got := s2.BytesSent() - before; got != size-50_000 {
		t.Errorf("the resumed download fetched %d bytes, want %d", got, size-50_000)
	}
}

func TestWrongSHA256IsDeletedAndNamed(t *testing.T) {
	s, c, _ := setup(t, hub.Options{})
	s.Corrupt("model.safetensors")
	_, err := c.Download(context.Background(), hub.Repo{ID: "org/tiny"}, "model.safetensors")
	if !errors.Is(err, hub.ErrCorrupt) || !strings.Contains(err.Error(), "model.safetensors") {
		t.Fatalf("corrupt: %v", err)
	}
	t.Logf("corrupt: %v", err)
	blobs, _ := os.ReadDir(filepath.Join(c.CacheDir(), "models--org--tiny", "blobs"))
	for _, b := range blobs {
		t.Errorf("left in blobs/: %s", b.Name())
	}
}

func TestDanglingSymlinkReportedThenRepaired(t *testing.T) {
	_, c, _ := setup(t, hub.Options{})
	ctx := context.Background()
	p, err := c.Download(ctx, hub.Repo{ID: "org/tiny"}, "config.json")
	if err != nil {
		t.Fatal(err)
	}
	blob, _ := filepath.EvalSymlinks(p)
	os.Remove(blob)
	if _, err := c.Cached(hub.Repo{ID: "org/tiny"}, "config.json"); err == nil || !strings.Contains(err.Error(), "dangling symlink") {
		t.Errorf("offline, a dangling symlink: %v", err)
	}
	if _, err := c.Download(ctx, hub.Repo{ID: "org/tiny"}, "config.json"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != `{"model_type":"bert"}` {
		t.Errorf("repaired: %q %v", b, err)
	}
}

func TestNamesEscapingTheSnapshotAreRefused(t *testing.T) {
	s, c, _ := setup(t, hub.Options{})
	ctx := context.Background()
	for _, name := range []string{"../x", "/etc/passwd", "a/../../x", `..\x`, "C:x", "a//b", ""} {
		if _, err := c.Download(ctx, hub.Repo{ID: "org/tiny"}, name); !errors.Is(err, hub.ErrUnsafePath) {
			t.Errorf("%q: %v", name, err)
		}
	}
	s.Commit("model", "org/evil", map[string][]byte{"config.json": []byte("{}"), "a/../../../outside": []byte("x")})
	if _, err := c.Snapshot(ctx, hub.Repo{ID: "org/evil"}, hub.Filter{}); !errors.Is(err, hub.ErrUnsafePath) {
		t.Errorf("a file list with an escaping name: %v", err)
	}
	// A folder of the snapshot that is a symlink is not written through.
	commit := s.Commit("model", "org/link", map[string][]byte{"sub/f.txt": []byte("x")})
	snap := filepath.Join(c.CacheDir(), "models--org--link", "snapshots", commit)
	os.MkdirAll(snap, 0o755)
	os.Symlink(t.TempDir(), filepath.Join(snap, "sub"))
	if _, err := c.Download(ctx, hub.Repo{ID: "org/link"}, "sub/f.txt"); !errors.Is(err, hub.ErrUnsafePath) {
		t.Errorf("through a symlinked folder: %v", err)
	}
}

func TestSnapshotFilterAndDatasets(t *testing.T) {
	s, c, commit := setup(t, hub.Options{})
	ctx := context.Background()
	dir, err := c.Snapshot(ctx, hub.Repo{ID: "org/tiny"}, hub.Filter{Include: []string{"*.json", "sub/"}, Exclude: []string{"*.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(dir) != commit {
		t.Errorf("snapshot %s", dir)
	}
	got, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(got) != 1 || filepath.Base(got[0]) != "config.json" {
		t.Errorf("filtered snapshot holds %v", got)
	}
	dc := s.Commit("dataset", "org/rt", map[string][]byte{"data/train-00000-of-00001.parquet": []byte("PAR1...PAR1")})
	p, err := c.Download(ctx, hub.Repo{ID: "org/rt", Type: hub.Dataset}, "data/train-00000-of-00001.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(c.CacheDir(), "datasets--org--rt", "snapshots", dc, "data", "train-00000-of-00001.parquet"); p != want {
		t.Errorf("dataset file %s, want %s", p, want)
	}
	for _, r := range s.Requests() {
		if r.Method == "HEAD" && strings.Contains(r.Path, "org/rt") && !strings.HasPrefix(r.Path, "/datasets/org/rt/resolve/") {
			t.Errorf("dataset file asked at %s", r.Path)
		}
	}
}

// TestTimeouts: a Hub that does not answer the metadata request in the metadata timeout
// ($HF_HUB_ETAG_TIMEOUT) is one that cannot be reached (the cache answers); a download that
// gets no bytes for the download timeout ($HF_HUB_DOWNLOAD_TIMEOUT) fails naming it.
func TestTimeouts(t *testing.T) {
	s, _, commit := setup(t, hub.Options{})
	t.Setenv("HF_HUB_ETAG_TIMEOUT", "1")
	t.Setenv("HF_HUB_DOWNLOAD_TIMEOUT", "1")
	c, err := hub.New(hub.Options{Endpoint: s.URL, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Download(ctx, hub.Repo{ID: "org/tiny"}, "config.json"); err != nil {
		t.Fatal(err)
	}
	s.StallHub(true)
	start := time.Now()
	p, err := c.Download(ctx, hub.Repo{ID: "org/tiny"}, "config.json")
	if err != nil || !strings.Contains(p, commit) {
		t.Errorf("a Hub past the metadata timeout, a cached file: %s %v", p, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the metadata timeout of 1 s took %s", d)
	}
	s.StallHub(false)
	s.Stall("model.safetensors")
	_, err = c.Download(ctx, hub.Repo{ID: "org/tiny"}, "model.safetensors")
	if err == nil || !strings.Contains(err.Error(), "HF_HUB_DOWNLOAD_TIMEOUT") {
		t.Errorf("a stalled download: %v", err)
	}
	t.Logf("stalled: %v", err)
}

// TestProgressBarPerFile: with Options.Progress, a download draws its bar there, naming the
// repository and the file.
func TestProgressBarPerFile(t *testing.T) {
	var bar bytes.Buffer
	_, c, _ := setup(t, hub.Options{Progress: &bar})
	if _, err := c.Download(context.Background(), hub.Repo{ID: "org/tiny"}, "model.safetensors"); err != nil {
		t.Fatal(err)
	}
	if got := bar.String(); !strings.Contains(got, "org/tiny: model.safetensors") || !strings.Contains(got, "100%") {
		t.Errorf("progress output %q", got)
	}
}
