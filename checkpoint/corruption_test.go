package checkpoint

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
)

// flipByte inverts the bits of the byte at offset (negative: from the end) of a file.
func flipByte(t *testing.T, path string, offset int64) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if offset < 0 {
		offset += int64(len(raw))
	}
	raw[offset] ^= 0xFF
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// headerEnd returns the offset of the first data byte of a safetensors file.
func headerEnd(t *testing.T, path string) int64 {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return 8 + int64(binary.LittleEndian.Uint64(raw[:8]))
}

func TestCorruption(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, ckpt string)
		want   string // substring of the Load error
	}{
		{"flip a weight byte", func(t *testing.T, ckpt string) {
			p := filepath.Join(ckpt, WeightsFile)
			flipByte(t, p, headerEnd(t, p)+3)
		}, "weights.safetensors: SHA-256"},
		{"flip an optimizer byte at the end", func(t *testing.T, ckpt string) {
			flipByte(t, filepath.Join(ckpt, OptimizerFile), -1)
		}, "optimizer.safetensors: SHA-256"},
		{"flip a header byte", func(t *testing.T, ckpt string) {
			flipByte(t, filepath.Join(ckpt, WeightsFile), 20)
		}, "weights.safetensors"},
		{"flip a progress byte", func(t *testing.T, ckpt string) {
			flipByte(t, filepath.Join(ckpt, ProgressFile), 5)
		}, "progress.json: SHA-256"},
		{"truncate optimizer", func(t *testing.T, ckpt string) {
			p := filepath.Join(ckpt, OptimizerFile)
			info, _ := os.Stat(p)
			if err := os.Truncate(p, info.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, "optimizer.safetensors has"},
		{"truncate weights to zero", func(t *testing.T, ckpt string) {
			if err := os.Truncate(filepath.Join(ckpt, WeightsFile), 0); err != nil {
				t.Fatal(err)
			}
		}, "weights.safetensors has 0 bytes"},
		{"delete manifest", func(t *testing.T, ckpt string) {
			if err := os.Remove(filepath.Join(ckpt, ManifestFile)); err != nil {
				t.Fatal(err)
			}
		}, "MANIFEST.json is missing"},
		{"truncate manifest", func(t *testing.T, ckpt string) {
			if err := os.Truncate(filepath.Join(ckpt, ManifestFile), 30); err != nil {
				t.Fatal(err)
			}
		}, "MANIFEST.json does not parse"},
		{"delete weights", func(t *testing.T, ckpt string) {
			if err := os.Remove(filepath.Join(ckpt, WeightsFile)); err != nil {
				t.Fatal(err)
			}
		}, "file weights.safetensors listed in MANIFEST.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m, rec := newTestManager(t, dir, Options{})
			saveAt(t, m, 1)
			saveAt(t, m, 2)
			latest := saveAt(t, m, 3)
			tc.damage(t, latest)

			// VerifyManifest and Load report the damage and leave the Store alone.
			for what, err := range map[string]error{
				"VerifyManifest": VerifyManifest(latest),
				"Load":           m.Load(latest, &State{Store: newTestStore(t, 50)}),
			} {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s error = %v\nwant ErrCorrupt mentioning %q", what, err, tc.want)
				}
			}
			store := newTestStore(t, 50)
			if err := m.Load(latest, &State{Store: store}); err == nil {
				t.Fatal("Load of a damaged checkpoint succeeded")
			}
			checkStore(t, store, 50)

			// LoadLatest falls back to step 2 and says so.
			st := &State{Store: model.NewStore()}
			path, err := m.LoadLatest(st)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Base(path) != "ckpt-000000002" || st.Progress.Step != 2 {
				t.Errorf("fell back to %s (step %d), want ckpt-000000002", path, st.Progress.Step)
			}
			checkStore(t, st.Store, 2)
			logs := strings.Join(rec.all(), "\n")
			if !strings.Contains(logs, "fell back to "+path) || !strings.Contains(logs, tc.want) {
				t.Errorf("fallback not reported; log:\n%s", logs)
			}
		})
	}
}

func TestLatestPointerProblems(t *testing.T) {
	tests := []struct {
		name    string
		pointer string // content of "latest"; "-" deletes it
		wantLog string
	}{
		{"missing pointer", "-", ""},
		{"garbage pointer", "../../etc/passwd\n", "not a checkpoint name"},
		{"dangling pointer", "ckpt-000000099\n", "does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m, rec := newTestManager(t, dir, Options{})
			saveAt(t, m, 1)
			saveAt(t, m, 2)
			p := filepath.Join(dir, LatestFile)
			if tc.pointer == "-" {
				_ = os.Remove(p)
			} else if err := os.WriteFile(p, []byte(tc.pointer), 0o644); err != nil {
				t.Fatal(err)
			}
			st := &State{Store: model.NewStore()}
			path, err := m.LoadLatest(st)
			if err != nil || filepath.Base(path) != "ckpt-000000002" {
				t.Fatalf("LoadLatest = %q, %v; want ckpt-000000002", path, err)
			}
			logs := strings.Join(rec.all(), "\n")
			if tc.wantLog != "" && !strings.Contains(logs, tc.wantLog) {
				t.Errorf("log %q lacks %q", logs, tc.wantLog)
			}
		})
	}
}

func TestAllDamaged(t *testing.T) {
	dir := t.TempDir()
	m, _ := newTestManager(t, dir, Options{})
	for _, step := range []int64{1, 2} {
		path := saveAt(t, m, step)
		flipByte(t, filepath.Join(path, ProgressFile), 2)
	}
	_, err := m.LoadLatest(&State{Store: model.NewStore()})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "no intact checkpoint") ||
		!strings.Contains(err.Error(), "ckpt-000000001") || !strings.Contains(err.Error(), "ckpt-000000002") {
		t.Errorf("error = %v", err)
	}
}

// A Store mismatch is not damage: LoadLatest must report it at once, not load an older checkpoint.
func TestMismatchDoesNotFallBack(t *testing.T) {
	dir := t.TempDir()
	m, rec := newTestManager(t, dir, Options{})
	saveAt(t, m, 1)
	saveAt(t, m, 2)
	store := newTestStore(t, 0)
	_ = store.DeleteVariable("/dense/biases")
	_, err := m.LoadLatest(&State{Store: store})
	if err == nil || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `"/dense/biases"`) {
		t.Errorf("error = %v, want a mismatch naming /dense/biases", err)
	}
	if logs := rec.all(); len(logs) > 0 {
		t.Errorf("unexpected fallback: %v", logs)
	}
}
