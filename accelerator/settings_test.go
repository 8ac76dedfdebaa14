package accelerator

import (
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
)

// TestRefusedCombinations: every row of the refusals table has a case here that it refuses,
// with an error naming both settings as the user gave them (the Config field or the
// variable), and the same settings one at a time, or on a strategy the row does not name,
// run.
func TestRefusedCombinations(t *testing.T) {
	t.Parallel()
	bf16 := collective.CodecNamed("bf16")
	fromConfig := map[string]string{"Verify": "Config.Verify", "Sharding": "Config.Sharding", "GradientCompression": "Config.GradientCompression"}
	fromEnv := map[string]string{"Verify": "$" + envvar.Verify.Name, "Sharding": "$" + envvar.Sharding.Name,
		"GradientCompression": "$" + envvar.GradientCompression.Name}
	cases := []struct {
		first, second string // the refused pair (empty: a combination that runs)
		c             combination
		want          []string // in the error
	}{
		{"GradientCompression", "Verify", combination{settings: &settings{codec: bf16, verify: 1, from: fromConfig}},
			[]string{`Config.GradientCompression "bf16"`, "Config.Verify 1"}},
		{"GradientCompression", "Verify", combination{settings: &settings{codec: bf16, verify: 3, from: fromEnv}},
			[]string{`$GOACCEL_GRADIENT_COMPRESSION "bf16"`, "$GOACCEL_VERIFY 3"}},
		{"Sharding", "Verify", combination{settings: &settings{shard: shardZero1, verify: 1, from: fromConfig}, strategy: zero1{}},
			[]string{`Config.Sharding "zero1"`, "Config.Verify 1"}},
		{"Sharding", "GradientCompression", combination{settings: &settings{shard: shardZero3, codec: bf16, from: fromEnv}, strategy: zero1{}},
			[]string{`$GOACCEL_SHARDING "zero3"`, `$GOACCEL_GRADIENT_COMPRESSION "bf16"`}},
		{"Verify", "WithAutoBatch", combination{settings: &settings{verify: 2, from: fromConfig}, strategy: inGraph{}, microBatches: 4},
			[]string{"Config.Verify 2", "WithAutoBatch (4 micro-batches)"}},
		// Combinations that run.
		{"", "", combination{settings: &settings{shard: shardZero1, verify: 1, from: fromConfig}, strategy: inGraph{}}, nil},
		{"", "", combination{settings: &settings{shard: shardZero1, codec: bf16, from: fromConfig}, strategy: hostReduced{}}, nil},
		{"", "", combination{settings: &settings{codec: bf16, from: fromConfig}, strategy: hostReduced{}}, nil},
		{"", "", combination{settings: &settings{verify: 1, from: fromConfig}, strategy: hostReduced{}, microBatches: 1}, nil},
		{"", "", combination{settings: &settings{from: fromConfig}, strategy: zero1{}, microBatches: 4}, nil},
	}
	covered := map[[2]string]bool{}
	for _, c := range cases {
		err := checkCombination(c.c)
		if c.first == "" {
			if err != nil {
				t.Errorf("%+v: %v; want it to run", c.c, err)
			}
			continue
		}
		covered[[2]string{c.first, c.second}] = true
		if err == nil {
			t.Errorf("%s with %s: no error", c.first, c.second)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s with %s: %v; want it to name %s", c.first, c.second, err, w)
			}
		}
	}
	for _, r := range refusals {
		if !covered[[2]string{r.first, r.second}] {
			t.Errorf("the refusal of %s with %s has no case in this test", r.first, r.second)
		}
	}
}

// TestSettingsFrom: New names each setting of a refused combination where the user gave it.
func TestSettingsFrom(t *testing.T) {
	t.Setenv(envvar.Verify.Name, "2")
	t.Setenv(envvar.GradientCompression.Name, "")
	s, err := resolveSettings(Config{GradientCompression: "fp16"})
	if err != nil {
		t.Fatal(err)
	}
	if s.verify != 2 || s.codec == nil || s.codec.Name() != "fp16" {
		t.Fatalf("settings %+v", s)
	}
	if s.from["Verify"] != "$GOACCEL_VERIFY" || s.from["GradientCompression"] != "Config.GradientCompression" || s.from["Sharding"] != "$GOACCEL_SHARDING" {
		t.Errorf("from %v", s.from)
	}
	err = checkCombination(combination{settings: &s})
	if err == nil || !strings.Contains(err.Error(), `Config.GradientCompression "fp16" with $GOACCEL_VERIFY 2`) {
		t.Errorf("%v", err)
	}
}
