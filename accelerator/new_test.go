package accelerator

import (
	"errors"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
)

// closeRecorder is a one-process group that records whether it was closed.
type closeRecorder struct {
	collective.Solo
	closed bool
}

func (g *closeRecorder) Close() error { g.closed = true; return nil }

// withNewMesh makes newAccelerator create its device mesh with f.
func withNewMesh(f func(a *Accelerator) (*distributed.DeviceMesh, error)) newOption {
	return func(a *Accelerator) { a.newMesh = f }
}

// TestNewReleasesAllWhenTheMeshFails: when the device mesh cannot be created, New returns the
// error having finalised the backend it opened and closed the process group it joined.
func TestNewReleasesAllWhenTheMeshFails(t *testing.T) {
	t.Parallel()
	plugin := cpuPlugin(t)
	var backend compute.Backend
	failingMesh := func(a *Accelerator) (*distributed.DeviceMesh, error) {
		backend = a.backend
		return nil, errors.New("no mesh today")
	}
	grp := &closeRecorder{}
	a, err := newAccelerator(Config{Backend: plugin, Devices: 2, Quiet: true}, processInfo{worldSize: 1, source: "test"}, grp,
		withNewMesh(failingMesh))
	if err == nil {
		a.Close()
		t.Fatal("New succeeded; want the mesh's error")
	}
	if !strings.Contains(err.Error(), "creating the device mesh: no mesh today") {
		t.Errorf("error %q does not carry the mesh's", err)
	}
	if backend == nil {
		t.Fatal("the mesh was never asked for")
	}
	if !backend.IsFinalized() {
		t.Error("the backend was left open")
	}
	if !grp.closed {
		t.Error("the process group was left open")
	}
}
