package table

import (
	"strings"
	"testing"
)

// FuzzReadmeConfigs: any dataset card front matter is read or refused with an error, never a
// panic, and every config read has a name.
func FuzzReadmeConfigs(f *testing.F) {
	for _, seed := range []string{
		"---\nconfigs:\n- config_name: a\n  data_files:\n  - split: train\n    path: \"x/*.csv\"\n  default: true\n---\n",
		"---\nconfigs:\n  - config_name: b\n    data_dir: d\n    data_files: [a.csv, 'b.csv']\n---\n",
		"---\nconfigs:\n- data_files: {train: a.csv}\n---\n",
		"---\nconfigs:\n-\n  - x\n- \"q\": v # c\n---\n",
		"---\nconfigs: x\n---\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, readme string) {
		configs, err := readmeConfigs(readme)
		if err != nil {
			return
		}
		for _, c := range configs {
			if c.name == "" {
				t.Errorf("a config without a name from %q", readme)
			}
		}
	})
}

func TestReadmeConfigsForms(t *testing.T) {
	configs, err := readmeConfigs("---\npretty_name: x\nconfigs:\n  - config_name: b\n    data_dir: d/\n    data_files:\n      train: tr.csv\n      test: [te1.csv, te2.csv]\n  - config_name: c\n    data_files: all.jsonl\n---\n# card\n")
	if err != nil || len(configs) != 2 {
		t.Fatalf("%v %v", configs, err)
	}
	b, c := configs[0], configs[1]
	if b.dataDir != "d" || strings.Join(b.files["test"], ",") != "te1.csv,te2.csv" || strings.Join(b.files["train"], ",") != "tr.csv" {
		t.Errorf("config b: %+v", b)
	}
	if strings.Join(c.files["train"], ",") != "all.jsonl" {
		t.Errorf("config c: %+v", c)
	}
	if _, err := readmeConfigs("---\nconfigs: x\n---\n"); err == nil {
		t.Error("configs: x was taken")
	}
}
