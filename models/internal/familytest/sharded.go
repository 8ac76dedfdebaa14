package familytest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// ShardFolder copies the model folder dir into a new one whose weights are two shards and a
// model.safetensors.index.json, as transformers' save_pretrained writes a large model:
// model-00001-of-00002.safetensors with the first half of the tensors by name, -00002 with the
// rest (and with the first tensor again when twice is set, a broken index).
func ShardFolder(t testing.TB, dir string, twice bool) string {
	t.Helper()
	out := t.TempDir()
	if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(out, "model.safetensors")
	named, _, err := safetensors.ReadFile(single)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(single); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(named, func(a, b safetensors.Named) int { return strings.Compare(a.Name, b.Name) })
	half := len(named) / 2
	shards := [][]safetensors.Named{named[:half], slices.Clone(named[half:])}
	if twice {
		shards[1] = append(shards[1], named[0])
	}
	weightMap := map[string]string{}
	for i, shard := range shards {
		name := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}[i]
		if err := safetensors.WriteFile(filepath.Join(out, name), shard, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
		for _, n := range shard {
			weightMap[n.Name] = name
		}
	}
	index, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap})
	if err := os.WriteFile(filepath.Join(out, "model.safetensors.index.json"), index, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// CheckSharded loads the model folder dir (loadClassifier: the family's LoadPretrained) as it is and as two shards (ShardFolder), and checks that both give the
// same variables with the same values; and that a tensor two shards hold is an error naming
// it and both files.
func CheckSharded[C interface{ Store() *model.Store }](t *testing.T, dir string, loadClassifier func(dir string) (C, error)) {
	t.Helper()
	load := func(dir string) (*model.Store, error) {
		c, err := loadClassifier(dir)
		if err != nil {
			return nil, err
		}
		return c.Store(), nil
	}
	want, err := load(dir)
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	sharded := ShardFolder(t, dir, false)
	got, err := load(sharded)
	if err != nil {
		t.Fatalf("loading the sharded %s: %v", sharded, err)
	}
	n := 0
	for v := range want.IterVariables() {
		if !v.HasValue() {
			continue
		}
		n++
		w := got.GetVariable(v.Path())
		if w == nil || !w.HasValue() {
			t.Errorf("variable %s: loaded from the single file, not from the shards", v.Path())
			continue
		}
		a, errA := v.Value()
		b, errB := w.Value()
		if errA != nil || errB != nil {
			t.Fatalf("variable %s: %v, %v", v.Path(), errA, errB)
		}
		if !a.Shape().Equal(b.Shape()) || !slices.Equal(tensors.MustCopyFlatData[float32](a), tensors.MustCopyFlatData[float32](b)) {
			t.Errorf("variable %s differs between the single file and the shards", v.Path())
		}
	}
	for w := range got.IterVariables() {
		if w.HasValue() && want.GetVariable(w.Path()) == nil {
			t.Errorf("variable %s: loaded from the shards only", w.Path())
		}
	}
	if n == 0 {
		t.Fatalf("loading %s set no variable", dir)
	}
	broken := ShardFolder(t, dir, true)
	if _, err := load(broken); err == nil || !strings.Contains(err.Error(), "appears twice") ||
		!strings.Contains(err.Error(), "model-00001-of-00002.safetensors") || !strings.Contains(err.Error(), "model-00002-of-00002.safetensors") {
		t.Errorf("a tensor in both shards: error %v, want one saying so and naming both files", err)
	}
}
