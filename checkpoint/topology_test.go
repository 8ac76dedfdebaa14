package checkpoint

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestRecordTopology: the list of topologies gains an entry per change, at the step of the
// change; an older Progress (Devices set, no list) starts it with its own topology; the list
// survives progress.json.
func TestRecordTopology(t *testing.T) {
	var p Progress
	p.RecordTopology(2, 2)
	p.Step = 12
	p.RecordTopology(2, 2) // the same topology: no entry
	p.Step = 20
	p.RecordTopology(3, 1)
	want := []Topology{{0, 2, 2}, {20, 3, 1}}
	if !reflect.DeepEqual(p.Topologies, want) || p.Devices != 3 || p.Processes != 1 {
		t.Errorf("Progress %+v, want topologies %v on 3 devices x 1 process", p, want)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Progress
	if err := json.Unmarshal(raw, &back); err != nil || !reflect.DeepEqual(back, p) {
		t.Errorf("progress.json %s reads back as %+v (%v)", raw, back, err)
	}
	old := Progress{Step: 30, Devices: 4, Processes: 1}
	old.RecordTopology(1, 1)
	if want := []Topology{{0, 4, 1}, {30, 1, 1}}; !reflect.DeepEqual(old.Topologies, want) {
		t.Errorf("an older Progress: topologies %v, want %v", old.Topologies, want)
	}
}
