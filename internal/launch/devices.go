package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
)

// lookup reads a variable of the table (internal/envvar) from an environment list ("K=V");
// the last one wins, as in exec.
func lookup(env []string, key string) (string, bool) { return envvar.Lookup(env, key) }

// setEnv returns env with key set to value, replacing every earlier definition.
func setEnv(env []string, key, value string) []string {
	return append(removeKey(env, key), key+"="+value)
}

// removeKey returns a copy of env without key.
func removeKey(env []string, key string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return out
}

// visibleGPUs lists the GPUs a rank may be given: $CUDA_VISIBLE_DEVICES's entries when it is
// set (empty or "-1": none), else one per /dev/nvidiaN file. A backend forced to the CPU or
// to pure Go ($GOMLX_BACKEND) sees none.
func visibleGPUs(env []string) []string {
	if b, _ := lookup(env, envvar.Backend.Name); b == "go" || strings.Contains(b, "cpu") {
		return nil
	}
	if v, ok := lookup(env, envvar.CUDAVisibleDevices.Name); ok {
		var ids []string
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" && id != "-1" {
				ids = append(ids, id)
			}
		}
		return ids
	}
	files, _ := filepath.Glob("/dev/nvidia[0-9]*")
	ids := make([]string, len(files))
	for i := range files {
		ids[i] = strconv.Itoa(i)
	}
	return ids
}

// ResolveNproc turns --nproc_per_node's value into a number of ranks, with torchrun's words:
// a positive number; "gpu": one rank per visible GPU (an error without GPUs); "cpu": one rank
// per CPU core this process may run on (its affinity, as torch's cpu_count); "auto": one per
// visible GPU, else one per core. "" (the flag not given) is goaccel's default: one per
// visible GPU, else 1 (one process driving all of the node's CPU devices).
func ResolveNproc(spec string, env []string) (int, error) {
	switch spec {
	case "gpu":
		g := visibleGPUs(env)
		if len(g) == 0 {
			return 0, fmt.Errorf("--nproc_per_node gpu: no GPU is visible (CUDA_VISIBLE_DEVICES, /dev/nvidia*): " +
				"give a number, cpu or auto")
		}
		return len(g), nil
	case "cpu":
		return runtime.NumCPU(), nil
	case "auto", "":
		if g := visibleGPUs(env); len(g) > 0 {
			return len(g), nil
		}
		if spec == "auto" {
			return runtime.NumCPU(), nil
		}
		return 1, nil
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("--nproc_per_node %q: want a positive number, gpu, cpu or auto", spec)
	}
	return n, nil
}

// CheckCPURanks refuses n ranks on this machine when no GPU is visible (env, as Config.Env)
// and n is more than the CPU cores the launcher may run on (its affinity mask, as
// runtime.NumCPU reads it): the ranks would take turns on the cores, and MPI's collectives
// spin-wait. The error starts with what (the flag and its value, as the user gave them)
// and says that --oversubscribe starts them anyway; the caller decides whether it asked.
func CheckCPURanks(what string, n int, env []string) error {
	if cores := runtime.NumCPU(); n > cores && len(visibleGPUs(env)) == 0 {
		return fmt.Errorf("%s: more ranks than the %d CPU cores this launcher may run on (its CPU affinity), and no GPU is visible: "+
			"each rank needs a core; give fewer ranks (cpu: one per core), or --oversubscribe to start them anyway", what, cores)
	}
	return nil
}

// share is what one local rank gets of this node: its environment variables for devices and threads.
type share struct {
	vars map[string]string
}

// splitNode divides this node among n local ranks: the visible GPUs (each rank a contiguous
// share of $CUDA_VISIBLE_DEVICES; with more ranks than GPUs, ranks share a GPU evenly) or else
// the CPU devices (each rank gets $GOACCEL_DEVICES/n of them, or one when it is not set), and
// the cores: GOMAXPROCS and OMP_NUM_THREADS = max(1, cores/n) unless already set. The note,
// when not empty, says what was left unused.
func splitNode(env []string, n int) (shares []share, note string, err error) {
	shares = make([]share, n)
	for i := range shares {
		shares[i].vars = map[string]string{}
	}
	if gpus := visibleGPUs(env); len(gpus) > 0 {
		g := len(gpus)
		switch {
		case n <= g && g%n == 0:
			per := g / n
			for i := range shares {
				shares[i].vars[envvar.CUDAVisibleDevices.Name] = strings.Join(gpus[i*per:(i+1)*per], ",")
			}
		case n > g && n%g == 0:
			per := n / g
			for i := range shares {
				shares[i].vars[envvar.CUDAVisibleDevices.Name] = gpus[i/per]
			}
			note = fmt.Sprintf("%d ranks share each GPU: limit each one's GPU memory", per)
		default:
			return nil, "", fmt.Errorf("--nproc_per_node %d does not divide the %d visible GPUs (%s), nor do they "+
				"divide it: choose a divisor or multiple of %d, or set CUDA_VISIBLE_DEVICES", n, g, strings.Join(gpus, ","), g)
		}
	} else {
		// Without $GOACCEL_DEVICES each rank gets one XLA CPU device (the accelerator's default:
		// more devices in one process are slower); with it, it is the node's total, shared out.
		total := n
		from := ""
		v, set := lookup(env, envvar.Devices.Name)
		if set {
			total, err = strconv.Atoi(v)
			if err != nil || total < 1 {
				return nil, "", fmt.Errorf("GOACCEL_DEVICES=%q is not a positive integer", v)
			}
			from = "GOACCEL_DEVICES=" + v
		}
		if n > total {
			return nil, "", fmt.Errorf("--nproc_per_node %d is more than the %d CPU devices of this node (%s): "+
				"no GPU is visible, and each rank needs at least one device", n, total, from)
		}
		if set || n > 1 {
			for i := range shares {
				shares[i].vars[envvar.Devices.Name] = strconv.Itoa(total / n)
			}
		}
		if total%n != 0 {
			note = unusedNote(n, total, from)
		}
	}
	threads := strconv.Itoa(max(1, runtime.NumCPU()/n))
	for _, key := range []string{envvar.GoMaxProcs.Name, envvar.OMPNumThreads.Name} {
		if _, set := lookup(env, key); !set {
			for i := range shares {
				shares[i].vars[key] = threads
			}
		}
	}
	return shares, note, nil
}

// unusedNote is the line that says how many of a node's total CPU devices n ranks leave
// unused (each rank gets total/n; uneven shares would give the ranks different batch counts),
// and which --nproc_per_node values use them all. from says where total came from.
func unusedNote(n, total int, from string) string {
	per := total / n
	var divisors []string
	for d := 1; d <= total; d++ {
		if total%d == 0 {
			divisors = append(divisors, strconv.Itoa(d))
		}
	}
	list := divisors[0]
	if k := len(divisors); k > 1 {
		list = strings.Join(divisors[:k-1], ", ") + " or " + divisors[k-1]
	}
	device := "device"
	if per > 1 {
		device = "devices"
	}
	left := fmt.Sprintf("%d is", total-n*per)
	if total-n*per > 1 {
		left = fmt.Sprintf("%d are", total-n*per)
	}
	return fmt.Sprintf("%d ranks x %d CPU %s use %d of the %d of this node (%s): %s left unused; --nproc_per_node %s uses them all",
		n, per, device, n*per, total, from, left, list)
}

// mpiDefaults are set in every rank's environment unless already set: MPICH's shared-memory
// collectives spin so hard with more ranks than cores that a large broadcast did not finish
// in minutes; its generic ("mpir") algorithms do not.
var mpiDefaults = []string{
	envvar.BcastAlgorithm.KV("mpir"),
	envvar.AllreduceAlgorithm.KV("mpir"),
	envvar.BarrierAlgorithm.KV("mpir"),
}

// inherited are variables of an enclosing launcher that would make a rank find the wrong peers,
// and the job secret, which the ranks do not need.
var inherited = []string{envvar.PMIFD.Name, envvar.PMIPort.Name, envvar.PMIID.Name, envvar.JobSecret.Name, envvar.PMISpawned.Name, envvar.PMIJobID.Name, envvar.PMIxRank.Name,
	envvar.PMIxNamespace.Name, envvar.PMIxServerURI2.Name, envvar.OMPIRank.Name, envvar.OMPISize.Name,
	envvar.OMPILocalRank.Name, envvar.OMPILocalSize.Name}

// rankEnv is the environment of one rank.
type rankEnv struct {
	rank, local, nlocal, world, node, nnodes, restart int
	masterAddr                                        string
	masterPort, storePort                             int
	share                                             share
	mpiLib                                            string
	logDir                                            string // the rank's log folder: $GOACCEL_LOG_DIR
}

func (r rankEnv) build(base []string) []string {
	env := base
	for _, k := range inherited {
		env = removeKey(env, k)
	}
	set := func(k string, v any) { env = setEnv(env, k, fmt.Sprint(v)) }
	// torchrun's variables.
	set(envvar.Rank.Name, r.rank)
	set(envvar.LocalRank.Name, r.local)
	set(envvar.WorldSize.Name, r.world)
	set(envvar.LocalWorldSize.Name, r.nlocal)
	set(envvar.GroupRank.Name, r.node)
	set(envvar.NodeRank.Name, r.node)
	set(envvar.GroupWorldSize.Name, r.nnodes)
	set(envvar.MasterAddr.Name, r.masterAddr)
	set(envvar.MasterPort.Name, r.storePort) // rank 0's own store (PyTorch's); the launcher's port is PMI_PORT
	set(envvar.TorchelasticRestartCount.Name, r.restart)
	set(envvar.RestartCount.Name, r.restart)
	// MPICH's process-manager interface: PMI-1 on the socket inherited from the launcher.
	set(envvar.PMIFD.Name, pmiFD)
	set(envvar.PMIRank.Name, r.rank)
	set(envvar.PMISize.Name, r.world)
	set(envvar.MPILocalRankID.Name, r.local)
	set(envvar.MPILocalNRanks.Name, r.nlocal)
	set(envvar.PMIVersion.Name, 1) // the server speaks PMI-1 only
	if r.logDir != "" {
		set(envvar.LogDir.Name, r.logDir) // where a hang report goes (internal/mpi)
	}
	for _, kv := range mpiDefaults {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := lookup(env, k); !ok {
			set(k, v)
		}
	}
	if _, ok := lookup(env, envvar.MPILib.Name); !ok && r.mpiLib != "" {
		set(envvar.MPILib.Name, r.mpiLib)
	}
	env = mpiLibVars(env, r.mpiLib)
	for k, v := range r.share.vars {
		set(k, v)
	}
	return env
}

// hostname is this machine's name, for messages.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	return h
}
