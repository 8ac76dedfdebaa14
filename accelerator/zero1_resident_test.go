package accelerator

import (
	"flag"
	"testing"

	"github.com/goaccel/goaccel/models/bert"
)

var zero1BERTBase = flag.Bool("zero1.bert_base", false,
	"TestZero1ResidentBERTBase2Layers: run it (by hand: needs about 8 GB free)")

// TestZero1ResidentBERTBase2Layers is TestZero1MatchesUnsharded's bytes check at BERT-base
// widths with 2 layers (38.7M parameters, rows of 8 tokens, global batch 8, 2 updates with
// clipping and accumulation over 2): each device of 2 processes x 2 devices (loopback)
// under zero1 holds, measured, at most (weights + gradients + state / 2) x 1.05 of the
// unsharded 1-device run's. By hand:
//
//	go test -count=1 -run TestZero1ResidentBERTBase2Layers ./accelerator -args -zero1.bert_base
func TestZero1ResidentBERTBase2Layers(t *testing.T) {
	if !*zero1BERTBase {
		t.Skip("LOUD SKIP: the BERT-base-width zero1 memory measurement over 2 x 2 runs by hand: -args -zero1.bert_base (needs about 8 GB free)")
	}
	run := zero1Bert(func(c *bert.Config) { *c = bertBase2Layers() })
	const batches = 4
	ref, err := run(newXLA(t, 1), batches, zero1Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	res := runProcessesConfig(t, 2, 2, func(cfg *Config) { cfg.Sharding = "zero1" }, nil,
		func(a *Accelerator) (zero1Result, error) { return run(a, batches, zero1Opts()...) })
	loss, param, ranks := zero1Worst(ref, res)
	t.Logf("zero1 2x2 BERT-base widths, 2 layers, %d updates: max |loss diff| %.2g, max |param diff| %.2g from unsharded 1x1; ranks differ by %g",
		batches/2, loss, param, ranks)
	zero1CheckBytes(t, "zero1 2x2 BERT-base widths 2 layers", ref, res)
}
