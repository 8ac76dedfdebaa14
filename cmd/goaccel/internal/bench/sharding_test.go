package bench

import (
	"strings"
	"testing"
)

// TestShardingNotes: each sharding of a work gets its ratio to "no" of the same framework,
// shape, precision and devices; a work without "no" gets none, and the precision notes
// compare precisions within one sharding.
func TestShardingNotes(t *testing.T) {
	mlp, tiny := Works["mlp"].CPU, Works["tiny"].CPU
	at := func(s Spec, p, sh string, sps float64) *Measurement {
		s.Precision, s.Devices, s.Sharding = p, 4, sh
		return &Measurement{Impl: "goaccel", Label: s.Label(), Spec: s, StepsPerS: sps, StepCPUS: 1 / sps}
	}
	ms := []*Measurement{
		at(mlp, "fp32", "no", 10), at(mlp, "fp32", "zero1", 8), at(mlp, "fp32", "zero3", 5),
		at(mlp, "bf16", "zero1", 4),
		at(tiny, "fp32", "zero3", 3), // no "no" of tiny
	}
	got := ShardingNotes(ms)
	want := "sharding: mlp h1024 B256 fp32 4dev goaccel: zero1 0.80x no's steps/s (8.000 / 10.000), 1.25x its CPU s/step (0.125 / 0.100)\n" +
		"sharding: mlp h1024 B256 fp32 4dev goaccel: zero3 0.50x no's steps/s (5.000 / 10.000), 2.00x its CPU s/step (0.200 / 0.100)\n"
	if got != want {
		t.Errorf("ShardingNotes =\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(got, "tiny") || strings.Contains(got, "bf16") {
		t.Errorf("notes for a work without an unsharded run:\n%s", got)
	}
	wantP := "precision: mlp h1024 B256 4dev zero1 goaccel: bf16 0.50x fp32's steps/s (4.000 / 8.000), 2.00x its CPU s/step (0.250 / 0.125)\n"
	if got := PrecisionNotes(ms); got != wantP {
		t.Errorf("PrecisionNotes =\n%s\nwant\n%s", got, wantP)
	}
}

// TestWithShardings: every spec under every sharding, the shardings of a spec together; a
// misspelt sharding is an error naming it and the valid values.
func TestWithShardings(t *testing.T) {
	a, b := Works["mlp"].CPU, Works["tiny"].CPU
	for _, s := range []*Spec{&a, &b} {
		s.Precision, s.Devices = "fp32", ShardingDevices(0)
	}
	got, err := WithShardings([]Spec{a, b}, []string{"no", "zero3"})
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, s := range got {
		labels = append(labels, s.Label())
	}
	want := "mlp h1024 B256 fp32 4dev no|mlp h1024 B256 fp32 4dev zero3|tiny B64 L64 fp32 4dev no|tiny B64 L64 fp32 4dev zero3"
	if strings.Join(labels, "|") != want {
		t.Errorf("labels %q, want %q", strings.Join(labels, "|"), want)
	}
	if same, _ := WithShardings([]Spec{a}, nil); len(same) != 1 || same[0].Sharding != "" {
		t.Errorf("no shardings changed the specs: %+v", same)
	}
	if _, err := WithShardings([]Spec{a}, []string{"zero4"}); err == nil || !strings.Contains(err.Error(), `sharding "zero4": valid values are no, zero1, zero2, zero3`) {
		t.Errorf("zero4: %v", err)
	}
	if ShardingDevices(8) != 8 {
		t.Errorf("ShardingDevices(8 GPUs) = %d", ShardingDevices(8))
	}
}
