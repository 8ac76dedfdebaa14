package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// listInManifest adds name to the manifest of the checkpoint at ckpt with the size and
// SHA-256 of contents, as a manifest written to read that file would have it.
func listInManifest(t *testing.T, ckpt, name string, contents []byte) {
	t.Helper()
	path := filepath.Join(ckpt, ManifestFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(contents)
	m.Files[name] = fileEntry{Size: int64(len(contents)), SHA256: hex.EncodeToString(sum[:])}
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestManifestStaysInCheckpoint: a file that MANIFEST.json lists must be one of the
// checkpoint's own: ".." and a symbolic link out of the folder are corruption, named, and
// nothing outside is read.
func TestManifestStaysInCheckpoint(t *testing.T) {
	secret := []byte("a file outside the checkpoint\n")
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, ckpt string) // lists the entry
		want  string
	}{
		{"dot-dot", func(t *testing.T, ckpt string) {
			info, err := os.Stat(filepath.Dir(ckpt))
			if err != nil {
				t.Fatal(err)
			}
			listInManifest(t, ckpt, "..", make([]byte, info.Size()))
		}, `".."`},
		{"symbolic link out", func(t *testing.T, ckpt string) {
			outside := filepath.Join(filepath.Dir(filepath.Dir(ckpt)), "secret.txt")
			if err := os.WriteFile(outside, secret, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(ckpt, "notes.txt")); err != nil {
				t.Fatal(err)
			}
			listInManifest(t, ckpt, "notes.txt", secret)
		}, `"notes.txt" is a symbolic link`},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			m, _ := newTestManager(t, filepath.Join(root, "ckpts"), Options{})
			ckpt := saveAt(t, m, 1)
			c.setup(t, ckpt)
			for what, err := range map[string]error{
				"VerifyManifest": VerifyManifest(ckpt),
				"Load":           m.Load(ckpt, &State{Store: newTestStore(t, 50)}),
			} {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), ManifestFile) {
					t.Errorf("%s: %v; want ErrCorrupt naming %s and %s", what, err, ManifestFile, c.want)
				}
			}
		})
	}
}

// fuzzFiles are the files of the checkpoint folder FuzzManifest reads.
var fuzzFiles = map[string]string{WeightsFile: "W", OptimizerFile: "O", ProgressFile: "{}"}

// FuzzManifest: whatever MANIFEST.json holds, VerifyManifest gives an error naming the
// checkpoint, or succeeds having read only the checkpoint's own files; it never panics.
func FuzzManifest(f *testing.F) {
	entries := map[string]fileEntry{}
	for name, contents := range fuzzFiles {
		sum := sha256.Sum256([]byte(contents))
		entries[name] = fileEntry{Size: int64(len(contents)), SHA256: hex.EncodeToString(sum[:])}
	}
	good, _ := json.Marshal(manifest{Format: manifestFormat, Version: manifestVersion, Step: 3, Created: "2026-01-01T00:00:00Z", Files: entries})
	f.Add(good)
	entries["../secret"] = fileEntry{Size: 1, SHA256: "00"}
	bad, _ := json.Marshal(manifest{Format: manifestFormat, Version: manifestVersion, Files: entries})
	f.Add(bad)
	f.Add([]byte(`{"format":"goaccel-checkpoint","version":1,"files":{"":{"size":0}}}`))
	f.Add([]byte(`{"format":"goaccel-checkpoint","version":1,"files":null}`))
	f.Add([]byte(`{"format":"goaccel-checkpoint","version":2}`))
	f.Add([]byte(`[1, 2]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "secret"), []byte("S"), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "ckpt-000000003")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, contents := range fuzzFiles {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(contents), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		err := VerifyManifest(dir)
		if err != nil {
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("error %v does not name %s", err, dir)
			}
			return
		}
		m, err := readManifest(dir)
		if err != nil {
			t.Fatalf("VerifyManifest passed, readManifest: %v", err)
		}
		for name := range m.Files {
			if _, ok := fuzzFiles[name]; !ok {
				t.Errorf("VerifyManifest passed with %q listed, not a file of the checkpoint", name)
			}
		}
	})
}
