package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/goaccel/goaccel/internal/localpath"
)

// File names inside a checkpoint directory.
const (
	// ManifestFile lists every other file with its size and SHA-256. It is written last.
	ManifestFile = "MANIFEST.json"
	// WeightsFile holds the trainable variables (model weights) in safetensors format.
	WeightsFile = "weights.safetensors"
	// OptimizerFile holds the non-trainable variables in safetensors format: optimizer state
	// (Adam moments, global step, learning rate), the main process's random state and any
	// other non-trainable model state (for example batch-norm averages).
	OptimizerFile = "optimizer.safetensors"
	// ProgressFile holds Progress as JSON.
	ProgressFile = "progress.json"
	// ConfigFile holds State.Config as JSON.
	ConfigFile = "config.json"
	// MetricsFile holds State.Metrics as JSON.
	MetricsFile = "metrics.json"

	manifestFormat  = "goaccel-checkpoint"
	manifestVersion = 1
)

// requiredFiles must be listed in every manifest.
var requiredFiles = []string{WeightsFile, OptimizerFile, ProgressFile}

// manifest is the content of MANIFEST.json.
type manifest struct {
	Format  string               `json:"format"`
	Version int                  `json:"version"`
	Step    int64                `json:"step"`
	Created string               `json:"created"`
	Files   map[string]fileEntry `json:"files"`
}

// fileEntry is the size and SHA-256 (hex) of one file.
type fileEntry struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

func newManifest(step int64) *manifest {
	return &manifest{Format: manifestFormat, Version: manifestVersion, Step: step,
		Created: time.Now().UTC().Format(time.RFC3339Nano), Files: map[string]fileEntry{}}
}

// readManifest reads and checks the manifest of the checkpoint at dir, including that every
// listed file exists with the listed size (cheap checks before any hashing).
func readManifest(dir string) (*manifest, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, corrupt(dir, fmt.Errorf("%s is missing", ManifestFile))
	}
	if err != nil {
		return nil, corrupt(dir, err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, corrupt(dir, fmt.Errorf("%s does not parse: %w", ManifestFile, err))
	}
	if m.Format != manifestFormat {
		return nil, corrupt(dir, fmt.Errorf("%s: format is %q, want %q", ManifestFile, m.Format, manifestFormat))
	}
	if m.Version != manifestVersion {
		return nil, fmt.Errorf("checkpoint %s: %s version %d is not supported (this build reads version %d)",
			dir, ManifestFile, m.Version, manifestVersion)
	}
	for _, name := range requiredFiles {
		if _, ok := m.Files[name]; !ok {
			return nil, corrupt(dir, fmt.Errorf("%s does not list %s", ManifestFile, name))
		}
	}
	for name, fe := range m.Files {
		if name != filepath.Base(name) || name == ManifestFile {
			return nil, corrupt(dir, fmt.Errorf("%s lists an invalid file name %q", ManifestFile, name))
		}
		path, err := localpath.Join(dir, name)
		if err != nil {
			return nil, corrupt(dir, fmt.Errorf("%s: %w", ManifestFile, err))
		}
		info, err := os.Stat(path)
		if err != nil {
			return nil, corrupt(dir, fmt.Errorf("file %s listed in %s: %w", name, ManifestFile, err))
		}
		if info.Size() != fe.Size {
			return nil, corrupt(dir, fmt.Errorf("%s has %d bytes, %s says %d (truncated or overwritten)",
				name, info.Size(), ManifestFile, fe.Size))
		}
	}
	return &m, nil
}

// check compares what was read from a file with its manifest entry.
func (fe fileEntry) check(dir, name, sum string, size int64) error {
	if size != fe.Size {
		return corrupt(dir, fmt.Errorf("%s: read %d bytes, %s says %d", name, size, ManifestFile, fe.Size))
	}
	if sum != fe.SHA256 {
		return corrupt(dir, fmt.Errorf("%s: SHA-256 %s differs from %s's %s (the file was modified or damaged)",
			name, sum, ManifestFile, fe.SHA256))
	}
	return nil
}

// readVerified reads a whole (small) file of the checkpoint and checks it against the manifest.
func (m *manifest) readVerified(dir, name string) ([]byte, error) {
	fe := m.Files[name]
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, corrupt(dir, err)
	}
	defer f.Close()
	p := newPipeHash()
	raw, err := io.ReadAll(&hashReader{r: f, p: p})
	sum, n := p.sum()
	if err != nil {
		return nil, corrupt(dir, fmt.Errorf("reading %s: %w", name, err))
	}
	if err := fe.check(dir, name, sum, n); err != nil {
		return nil, err
	}
	return raw, nil
}

// VerifyManifest checks the checkpoint directory at path against its manifest: every listed file must
// exist with the listed size and SHA-256. It reads every byte. Errors wrap ErrCorrupt when the
// checkpoint is damaged.
func VerifyManifest(path string) error {
	m, err := readManifest(path)
	if err != nil {
		return err
	}
	for name := range m.Files {
		f, err := os.Open(filepath.Join(path, name))
		if err != nil {
			return corrupt(path, err)
		}
		p := newPipeHash()
		// Hide f's WriterTo so that the copy goes through a large buffer.
		_, err = io.CopyBuffer(&hashWriter{w: io.Discard, p: p}, struct{ io.Reader }{f}, make([]byte, hashChunk))
		f.Close()
		sum, n := p.sum()
		if err != nil {
			return corrupt(path, fmt.Errorf("reading %s: %w", name, err))
		}
		if err := m.Files[name].check(path, name, sum, n); err != nil {
			return err
		}
	}
	return nil
}
