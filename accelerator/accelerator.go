package accelerator

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/goaccel/goaccel/internal/cudalib"
	"github.com/goaccel/goaccel/internal/timeline"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/gomlx/ml/model"
)

// Info describes what New found and chose.
type Info struct {
	Backend   string // "go" or "xla"
	Plugin    Plugin // the XLA plugin in use (zero for the pure-Go backend)
	Reason    string // why this backend was chosen
	Devices   int    // devices in use
	Available int    // devices the backend exposes
	Precision string // "fp32", "bf16" or "fp16"
	Found     []Plugin
	NVIDIA    NVIDIALibraries // for a CUDA plugin: the NVIDIA libraries it was pointed at
}

// NVIDIALibraries says where NVIDIA's CUDA libraries for a CUDA plugin were found (the
// nvidia/ folder of a pip install, and the CUDA data dir with libdevice and ptxas), and why.
// Kept exported as the type of Info.NVIDIA, which programs read to report what a CUDA run
// loaded; finding them without an Accelerator is internal (`goaccel env` does it).
type NVIDIALibraries = cudalib.Libraries

// Accelerator owns the backend, the device mesh and the process group. Create one with New
// at the start of a program; it is safe for use by one training loop at a time.
type Accelerator struct {
	cfg      Config
	backend  compute.Backend
	info     Info
	mesh     *distributed.DeviceMesh // nil on a single device
	proc     processInfo
	grp      collective.Group // the processes of the run (soloGroup for one): the source of rank and process count
	left     bool             // Close left grp
	settings                  // Config and the environment resolved (settings.go)
	// growthInterval is the finite fp16 updates in a row after which the loss scale grows
	// (precision.GrowthInterval; tests shorten it).
	growthInterval int64
	// newMesh, when not nil, replaces distributed.NewDeviceMesh in New (set by a newOption
	// of a test, which makes it fail).
	newMesh func(a *Accelerator) (*distributed.DeviceMesh, error)
	tl      *timeline.Recorder // Config.Timeline's recorder (nil: off)
	out     io.Writer
	muOut   sync.Mutex
	seed    int64
	// goConfig is an explicit pure-Go backend configuration ("go:..."), if one was given.
	goConfig string
	// knobs are the CUDA plugin's settings given (TF32, MemoryFraction, Preallocate).
	knobs []cudaKnob

	// shardedState holds, by Store, the state that a sharded job keeps outside its Store
	// (CompleteStore gives it to checkpoints).
	shardedState map[*model.Store]*strategy.Zero1
}

// meshAxis is the name of the device-mesh axis that batches are sharded along.
const meshAxis = "data"

// Info returns what New found and chose.
func (a *Accelerator) Info() Info { return a.info }

// Backend returns the GoMLX backend in use.
func (a *Accelerator) Backend() compute.Backend { return a.backend }

// NumDevices is the number of devices this process drives; each holds a full replica of the
// model and one per-device batch of every step.
func (a *Accelerator) NumDevices() int { return a.info.Devices }

// NumReplicas is the number of model replicas over all processes: devices x processes.
func (a *Accelerator) NumReplicas() int { return a.info.Devices * a.grp.Size() }

// SetSeed sets the seed used by models prepared afterwards (variable initialisation and
// in-graph randomness such as dropout).
func (a *Accelerator) SetSeed(seed int64) { a.seed = seed }

// Seed returns the current seed.
func (a *Accelerator) Seed() int64 { return a.seed }

// Close releases the backend and leaves the process group. The Accelerator must not be used
// afterwards: its rank and process count still read right, but a collective across processes
// fails.
func (a *Accelerator) Close() {
	if err := a.tl.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "accelerator: Close: writing the timeline: %v\n", err)
	}
	if a.backend != nil {
		a.backend.Finalize()
		a.backend = nil
	}
	if a.grp != nil && !a.left {
		_ = a.grp.Close()
		a.left = true
	}
}

// This process's place in the run (read from its process group, the one source of the rank
// and the number of processes) and printing on the main process.

// ProcessIndex is this process's rank among all processes (RANK, or the MPI launcher's
// equivalent), 0 for a single process.
func (a *Accelerator) ProcessIndex() int { return a.grp.Rank() }

// NumProcesses is the number of processes (WORLD_SIZE), 1 for a single process.
func (a *Accelerator) NumProcesses() int { return a.grp.Size() }

// LocalProcessIndex is this process's rank on its machine (LOCAL_RANK).
func (a *Accelerator) LocalProcessIndex() int { return a.proc.localRank }

// NumLocalProcesses is the number of processes on this machine (LOCAL_WORLD_SIZE).
func (a *Accelerator) NumLocalProcesses() int { return a.proc.localWorldSize }

// IsMainProcess reports whether this is the process that writes checkpoints and prints.
func (a *Accelerator) IsMainProcess() bool { return a.grp.Rank() == 0 }

// IsLocalMainProcess reports whether this is the first process on its machine (for work
// done once per machine, such as downloading or unpacking data).
func (a *Accelerator) IsLocalMainProcess() bool { return a.proc.localRank == 0 }

// Print writes its arguments, space separated, as one line on the main process only.
func (a *Accelerator) Print(args ...any) {
	if !a.IsMainProcess() {
		return
	}
	a.muOut.Lock()
	defer a.muOut.Unlock()
	fmt.Fprintln(a.out, args...)
}

// Printf is Print with a format; a newline is added when missing.
func (a *Accelerator) Printf(format string, args ...any) {
	if !a.IsMainProcess() {
		return
	}
	s := fmt.Sprintf(format, args...)
	if len(s) == 0 || s[len(s)-1] != '\n' {
		s += "\n"
	}
	a.muOut.Lock()
	defer a.muOut.Unlock()
	fmt.Fprint(a.out, s)
}

// plan prints a line of the run's plan unless the Accelerator is quiet.
func (a *Accelerator) plan(format string, args ...any) {
	if !a.cfg.Quiet {
		a.Printf(format, args...)
	}
}
