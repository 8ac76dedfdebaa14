package lora

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadConfig: whatever adapter_config.json holds, ReadConfig returns a configuration that
// validates, or an error naming the file; it never panics.
func FuzzReadConfig(f *testing.F) {
	f.Add([]byte(`{"peft_type": "LORA", "task_type": "SEQ_CLS", "r": 4, "lora_alpha": 8, "lora_dropout": 0.1, "target_modules": ["value", "query"], "bias": "none"}`))
	f.Add([]byte(`{"peft_type": "LORA", "task_type": "TOKEN_CLS", "r": 8, "lora_alpha": 16, "target_modules": ["query"], "modules_to_save": ["classifier", "score"], "base_model_name_or_path": "m", "init_lora_weights": true}`))
	f.Add([]byte(`{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ".*query"}`))
	f.Add([]byte(`{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": [1]}`))
	f.Add([]byte(`{"peft_type": "LORA", "r": 1e99, "lora_alpha": -1, "lora_dropout": 2, "target_modules": []}`))
	f.Add([]byte(`{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["query"], "rank_pattern": {"q": 1}, "layers_to_transform": [0]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, ConfigFile)
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := ReadConfig(dir)
		if err != nil {
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("error %v does not name %s", err, path)
			}
			return
		}
		if err := s.Config.Validate(); err != nil || s.Config.R <= 0 || s.Config.Alpha <= 0 {
			t.Errorf("ReadConfig accepted %+v: %v", s.Config, err)
		}
	})
}
