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
}
