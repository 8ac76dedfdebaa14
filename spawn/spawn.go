// Package spawn starts a program's ranks from the program itself, as PyTorch's
// mp.spawn(fn, nprocs=4) and Accelerate's notebook_launcher do: one call at the top of main,
//
//	func main() {
//		spawn.Ranks() // `go run . --nproc 4`: 4 ranks of this program, under goaccel launch's supervision
//		...
//	}
//
// and `go run ./train --nproc 4` trains as `goaccel launch --nproc_per_node 4 ./train` would,
// with nothing else typed. When --nproc N is on the command line and the process is not yet a
// rank, Ranks starts N copies of the running executable (/proc/self/exe, so `go run` works)
// with the same arguments less --nproc, as goaccel launch starts its ranks (internal/launch:
// each rank's environment, devices and CPUs; a failing rank named with its log and the others
// stopped; Ctrl-C stops every rank; --max_restarts N restarts the group), and ends the process
// with the job's exit status (0 when every rank exited 0, 1 when one failed, 130 when
// interrupted, 2 for a bad flag or no MPI library). In a rank it returns at once and the
// program goes on.
//
// It does nothing but remove its flags when the process already runs under a launcher:
// RANK or WORLD_SIZE (torchrun, goaccel launch, and the ranks Ranks itself starts), PMI_*
// (MPICH's mpiexec), OMPI_COMM_WORLD_* (Open MPI's mpirun), SLURM_STEP_ID (a task srun started; a batch
// script, whose SLURM_PROCID is 0, is none); then an
// --nproc given is ignored with one line on stderr, since that launcher chose the ranks. The
// list is internal/envvar's (RankMark). Without --nproc it does nothing: the program runs as
// one process, as before.
//
// The flags, read anywhere before a "--" and removed from os.Args so that the program's own
// flag parsing never sees them, in torchrun's spellings too: --nproc N (also --nprocs,
// --nproc_per_node, --nproc-per-node; N is a number, or torchrun's gpu: one per visible GPU,
// cpu: one per CPU core, or auto: gpu if there are GPUs, else cpu) and --max_restarts N
// (--max-restarts), and the switch --oversubscribe: without a visible GPU, more ranks than the
// CPU cores of the process's affinity are refused (exit status 2, naming the flag and the
// cores) unless it is given (or Config.Oversubscribe). A program whose own flag has one of
// these names passes Config.Nproc to Run instead.
//
// # With hostmalloc
//
// hostmalloc (GOACCEL_HOST_MALLOC=keep) re-executes the process under glibc's malloc settings
// in its package initialisation, before main runs, so it comes first: the process that calls
// Ranks already runs with those settings, and its ranks inherit GLIBC_TUNABLES, which tells
// hostmalloc in each rank that the settings are in effect: no rank re-executes again.
package spawn

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/launch"
)

// Config chooses the ranks of Run. The zero value reads everything from the command line.
type Config struct {
	// Nproc is the number of ranks to start; 0 reads --nproc from the command line, and
	// without it the program runs as one process (Run returns).
	Nproc int
	// MaxRestarts is how many times the whole group restarts after a rank fails; 0 reads
	// --max_restarts from the command line (default 0).
	MaxRestarts int
	// LogDir receives LogDir/attempt_A/rank_R/{stdout,stderr}.log ("": a new temporary folder).
	LogDir string
	// Oversubscribe starts more ranks than the CPU cores of this process's affinity when no
	// GPU is visible (refused otherwise); false reads --oversubscribe from the command line.
	Oversubscribe bool
}

// Ranks is Run(Config{}): the ranks are chosen by --nproc on the command line.
func Ranks() { Run(Config{}) }

// Run, the first call of main, starts the program's ranks and ends the process with the job's
// exit status when the process is not yet a rank and Config or the command line asks for
// ranks; otherwise it removes its flags from os.Args and returns (see the package doc).
func Run(cfg Config) {
	p, err := plan(os.Args[1:], envvar.Environ(), cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", progName(), err)
		os.Exit(2)
	}
	os.Args = append(os.Args[:1:1], p.args...)
	if p.notice != "" {
		fmt.Fprintf(os.Stderr, "%s: %s\n", progName(), p.notice)
	}
	if p.nproc == 0 {
		return
	}
	os.Exit(launch.Supervise(p.launchConfig(os.Args[0], cfg.LogDir), true))
}

func progName() string {
	name := os.Args[0]
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// decision is what Run does: start nproc ranks (0: none) running args, or say notice.
type decision struct {
	nproc, maxRestarts int
	args               []string // the program's arguments, less spawn's flags
	notice             string
}

// launchConfig is the job of the ranks: this executable again, with the arguments less
// spawn's flags; arg0 is the program's own os.Args[0], which the ranks see as theirs.
func (d decision) launchConfig(arg0, logDir string) launch.Config {
	return launch.Config{Program: "/proc/self/exe", Arg0: arg0, Args: d.args, NprocPerNode: d.nproc,
		MaxRestarts: d.maxRestarts, LogDir: logDir}
}

// flags are spawn's flags in every spelling accepted, without their dashes.
var flags = map[string]string{
	"nproc": "nproc", "nprocs": "nproc", "nproc_per_node": "nproc", "nproc-per-node": "nproc",
	"max_restarts": "max_restarts", "max-restarts": "max_restarts",
}

// plan reads spawn's flags from args (the program's arguments) and decides, from env and cfg,
// whether to start ranks.
func plan(args, env []string, cfg Config) (decision, error) {
	d := decision{nproc: cfg.Nproc, maxRestarts: cfg.MaxRestarts}
	given := map[string]string{} // flag -> value, as typed
	typed := map[string]string{} // flag -> its spelling on the command line
	oversubscribe := cfg.Oversubscribe
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			d.args = append(d.args, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "oversubscribe" && strings.HasPrefix(a, "-") { // a switch: no value of its own
			b, err := strconv.ParseBool(value)
			if !hasValue {
				b, err = true, nil
			}
			if err != nil {
				return d, fmt.Errorf("%s=%q: want true or false (or --oversubscribe alone)", a[:len(a)-len(value)-1], value)
			}
			oversubscribe = oversubscribe || b
			continue
		}
		which, ok := flags[name]
		if !ok || !strings.HasPrefix(a, "-") {
			d.args = append(d.args, a)
			continue
		}
		spelled := a
		if hasValue {
			spelled = a[:len(a)-len(value)-1]
		} else {
			if i+1 == len(args) {
				return d, fmt.Errorf("%s needs a value (%s)", a, want(which))
			}
			i++
			value = args[i]
		}
		given[which], typed[which] = value, spelled
	}
	if v, ok := given["max_restarts"]; ok && cfg.MaxRestarts == 0 {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return d, fmt.Errorf("%s %q: want %s", typed["max_restarts"], v, want("max_restarts"))
		}
		d.maxRestarts = n
	}
	if v, ok := given["nproc"]; ok && cfg.Nproc == 0 {
		n, err := launch.ResolveNproc(v, env)
		if err != nil {
			return d, fmt.Errorf("%s", strings.Replace(err.Error(), "--nproc_per_node", typed["nproc"], 1))
		}
		d.nproc = n
	}
	if d.nproc < 0 {
		return d, fmt.Errorf("spawn.Config.Nproc %d: want a positive number", d.nproc)
	}
	if mark, value := envvar.RankMark(env); mark != nil {
		if mark == envvar.SlurmStepID.Var { // a task of srun: its rank is SLURM_PROCID
			mark = envvar.SlurmProcID.Var
			value, _ = envvar.Lookup(env, mark.Name)
		}
		rankValued := mark == envvar.Rank.Var || mark == envvar.PMIRank.Var || mark == envvar.OMPIRank.Var || mark == envvar.SlurmProcID.Var
		if v, ok := given["nproc"]; ok && (!rankValued || value == "0") { // said once, by rank 0
			setBy := ""
			if len(mark.SetBy) > 0 {
				setBy = " (set by " + mark.Setters() + ")"
			}
			d.notice = fmt.Sprintf("%s %s ignored: this process is already a rank (%s=%s%s), whose launcher chose the ranks",
				typed["nproc"], v, mark.Name, value, setBy)
		}
		d.nproc = 0
	}
	if d.nproc > 0 && !oversubscribe {
		what := fmt.Sprintf("spawn.Config.Nproc %d", d.nproc)
		if cfg.Nproc == 0 {
			what = fmt.Sprintf("%s %s", typed["nproc"], given["nproc"])
		}
		if err := launch.CheckCPURanks(what, d.nproc, env); err != nil {
			return d, err
		}
	}
	return d, nil
}

// want says what a flag's value should be.
func want(flag string) string {
	if flag == "max_restarts" {
		return "0 or more restarts of the group after a rank fails"
	}
	return "a positive number of ranks, gpu, cpu or auto"
}
