package checkpoint

import (
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/gomlx/ml/model"
)

// State is what a checkpoint holds: the Store (model weights and optimizer state, which GoMLX
// keeps as variables of the same Store), the training position, and two free-form JSON values.
type State struct {
	// Store holds every variable to save, or to restore into. Required.
	Store *model.Store

	// Progress is the position of the run; it is written to progress.json.
	Progress Progress

	// Config is the run's configuration, saved as config.json (omitted when nil). On Load, if
	// Config is a non-nil pointer the JSON is decoded into it; otherwise Config is set to the raw
	// JSON as a json.RawMessage (nil when the checkpoint has none).
	Config any

	// Metrics is the metrics history, saved as metrics.json (omitted when nil), with the same
	// Load rules as Config.
	Metrics any
}

// Progress is the resumable position of a training run.
type Progress struct {
	// Epoch is the current epoch (0-based).
	Epoch int `json:"epoch"`
	// Step is the global step (optimizer updates done). It names the checkpoint directory.
	Step int64 `json:"step"`
	// Loader is the data loader's position, so that resuming yields the same next batches.
	Loader data.LoaderState `json:"loader"`
	// Seed is the run's seed. The device random state itself is a Store variable
	// ("/#rngState"), saved with the other variables, and in a multi-process run once per
	// process (see Ranks).
	Seed int64 `json:"seed"`
	// Devices and Processes record the topology at save time. They are informational: a
	// checkpoint loads on any number of devices.
	Devices   int `json:"devices,omitempty"`
	Processes int `json:"processes,omitempty"`
	// Topologies lists the topologies the run has had, oldest first, one entry per change
	// (see RecordTopology): a checkpoint saved on 2 processes x 2 devices and resumed on 1 x 3
	// holds {0, 2, 2} and {S, 3, 1}, S the step it was resumed at.
	Topologies []Topology `json:"topologies,omitempty"`
}

// Topology is where a run ran from step Step on: Devices devices per process x Processes
// processes.
type Topology struct {
	Step      int64 `json:"step"`
	Devices   int   `json:"devices"`
	Processes int   `json:"processes"`
}

// RecordTopology notes that the run continues at p.Step on devices x processes: it sets
// Devices and Processes and appends an entry to Topologies when the topology differs from the
// last one. Call it when a run starts (step 0) and after Load, then keep the Progress (updating
// Step, Epoch and Loader) for the next Save. A Progress without Topologies whose Devices are
// set (a checkpoint written before the list existed) starts the list with that topology, from
// step 0.
func (p *Progress) RecordTopology(devices, processes int) {
	if len(p.Topologies) == 0 && p.Devices > 0 {
		p.Topologies = []Topology{{Step: 0, Devices: p.Devices, Processes: max(p.Processes, 1)}}
	}
	now := Topology{Step: p.Step, Devices: devices, Processes: processes}
	if n := len(p.Topologies); n == 0 || p.Topologies[n-1].Devices != devices || p.Topologies[n-1].Processes != processes {
		p.Topologies = append(p.Topologies, now)
	}
	p.Devices, p.Processes = devices, processes
}
