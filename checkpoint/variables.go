package checkpoint

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Metadata keys written in the safetensors files of a checkpoint.
const (
	// metaFormat is read by Hugging Face transformers, which wants "pt" to accept a file.
	metaFormat = "format"
	// metaPaths maps tensor names to Store variable paths (a JSON object), for the tensors that
	// were renamed with Options.WeightName. Other tensors are named by their variable path.
	metaPaths = "goaccel.variable_paths"
)

// varFile is the content of one safetensors file of a checkpoint, ready to write.
type varFile struct {
	tensors  []safetensors.Named
	metadata map[string]string
}

// collectVariables splits the Store's variables into the weights file (trainable) and the
// optimizer file (all others), naming tensors by variable path unless rename says otherwise.
func collectVariables(store *model.Store, rename func(string) (string, bool)) (weights, others *varFile, err error) {
	weights = &varFile{metadata: map[string]string{metaFormat: "pt"}}
	others = &varFile{metadata: map[string]string{metaFormat: "pt"}}
	renamed := map[string]string{}
	for v := range store.IterVariables() {
		if !v.HasValue() {
			return nil, nil, fmt.Errorf("checkpoint: variable %q has no value yet (run the model, or "+
				"Store.InitializeVariables, before saving)", v.Path())
		}
		t, err := v.Value()
		if err != nil {
			return nil, nil, fmt.Errorf("checkpoint: reading variable %q: %w", v.Path(), err)
		}
		name := v.Path()
		file := others
		if v.Trainable {
			file = weights
			if rename != nil {
				if n, ok := rename(v.Path()); ok && n != name {
					renamed[n] = v.Path()
					name = n
				}
			}
		}
		file.tensors = append(file.tensors, safetensors.Named{Name: name, Tensor: t})
	}
	if len(renamed) > 0 {
		raw, err := json.Marshal(renamed)
		if err != nil {
			return nil, nil, fmt.Errorf("checkpoint: encoding variable names: %w", err)
		}
		weights.metadata[metaPaths] = string(raw)
	}
	return weights, others, nil
}

// writeVarFile writes f to dir/name, fsyncs it and returns its manifest entry.
func writeVarFile(dir, name string, vf *varFile) (fileEntry, error) {
	fw, err := newFileWriter(filepath.Join(dir, name))
	if err != nil {
		return fileEntry{}, fmt.Errorf("checkpoint: %w", err)
	}
	_, werr := safetensors.Write(fw, vf.tensors, vf.metadata)
	fe, err := fw.finish()
	if werr != nil {
		err = werr
	}
	if err != nil {
		return fileEntry{}, fmt.Errorf("checkpoint: %w", err)
	}
	return fe, nil
}

// loadedVar is a variable value read from a checkpoint, not yet put into a Store.
type loadedVar struct {
	path      string
	file      string
	trainable bool
	value     *tensors.Tensor
}

// freeLoaded releases the host memory of values that will not be used.
func freeLoaded(vars []loadedVar) {
	for _, lv := range vars {
		if lv.value != nil {
			_ = lv.value.FinalizeAll()
		}
	}
}

// readVarFile reads every tensor of one safetensors file of the checkpoint at dir, hashing the
// bytes as they pass and checking them against the manifest entry. Any failure is reported as
// corruption, and nothing read is returned.
func readVarFile(dir, name string, fe fileEntry, trainable bool) ([]loadedVar, error) {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, corrupt(dir, err)
	}
	defer f.Close()
	p := newPipeHash()
	hr := &hashReader{r: f, p: p}
	var out []loadedVar
	fail := func(err error) ([]loadedVar, error) {
		p.close()
		freeLoaded(out)
		return nil, corrupt(dir, fmt.Errorf("%s: %w", name, err))
	}
	rd, err := safetensors.NewReader(hr)
	if err != nil {
		return fail(err)
	}
	paths := map[string]string{}
	if raw, ok := rd.Header().Metadata[metaPaths]; ok {
		if err := json.Unmarshal([]byte(raw), &paths); err != nil {
			return fail(fmt.Errorf("metadata %q: %w", metaPaths, err))
		}
	}
	for {
		ti, t, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(err)
		}
		path := ti.Name
		if p, ok := paths[ti.Name]; ok {
			path = p
		}
		out = append(out, loadedVar{path: path, file: name, trainable: trainable, value: t})
	}
	if _, err := io.CopyBuffer(io.Discard, hr, make([]byte, 64<<10)); err != nil {
		return fail(err)
	}
	sum, n := p.sum()
	if err := fe.check(dir, name, sum, n); err != nil {
		freeLoaded(out)
		return nil, err
	}
	return out, nil
}
