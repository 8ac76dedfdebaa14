package data

import "testing"

func TestGlobalBatchNumReal(t *testing.T) {
	gb := &GlobalBatch{Shards: []*Batch{{Real: []bool{true, false, true}}, {Real: []bool{false}}, {Real: []bool{true}}}}
	if n := gb.NumReal(); n != 3 {
		t.Errorf("NumReal = %d, want 3", n)
	}
	if n := (&GlobalBatch{}).NumReal(); n != 0 {
		t.Errorf("empty NumReal = %d, want 0", n)
	}
}
