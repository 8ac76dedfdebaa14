// Command goaccel is goaccel's command line:
//
//	goaccel setup [--dir D]  install XLA's CPU plugin and MPICH (pip) into goaccel's home
//	                         folder, $GOACCEL_HOME (default ~/.local/share/goaccel)
//	goaccel env              what this machine offers (versions, PJRT plugins, devices, the
//	                         backend accelerator.New picks and why, relevant environment
//	                         variables): paste it into bug reports
//	goaccel plot RUN_DIR     redraw RUN_DIR/curves.png and curves.svg from metrics.jsonl
//	goaccel launch ...       run a program as several processes, on one machine or several
//	                         (torchrun's and horovodrun's flags; see internal/launch)
//	goaccel bench ...        goaccel against PyTorch on the same training works (see
//	                         cmd/goaccel/internal/bench)
//	goaccel estimate DIR     the memory plan per device of a BERT folder's training step
//	goaccel download ID      a Hugging Face Hub repository into the cache shared with Python
//
// The command only parses flags and prints: the work is done by the accelerator and
// trainer packages.
package main

import (
	"fmt"
	"io"
	"os"

	_ "github.com/goaccel/goaccel/hostmalloc" // GOACCEL_HOST_MALLOC=keep: glibc's keep settings instead of the block cache (bench workers run this binary)
	flag "github.com/spf13/pflag"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commands maps a subcommand to its function, which gets the remaining arguments.
var commands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"setup":    setupCmd,
	"env":      envCmd,
	"plot":     plotCmd,
	"launch":   launchCmd,
	"bench":    benchCmd,
	"estimate": estimateCmd,
	"download": downloadCmd,
	// bench-worker is started by bench, once per work; it is not listed in the usage.
	"bench-worker": benchWorkerCmd,
}

const usage = `usage: goaccel <command> [arguments]

commands:
  setup [--dir DIR] install XLA's CPU plugin and MPICH with pip into $GOACCEL_HOME (default
                    ~/.local/share/goaccel), where programs find them; idempotent
  env [--json]      print versions, PJRT plugins, devices per backend, the backend
                    accelerator.New would pick and why, and the relevant environment
  plot RUN_DIR      redraw RUN_DIR/curves.png and RUN_DIR/curves.svg from RUN_DIR/metrics.jsonl
  launch [flags] PROGRAM [ARGS...]
                    run PROGRAM as several processes (ranks), on this machine or several,
                    with torchrun's flags (--nproc_per_node, --nnodes, ...) or horovodrun's (-np, -H)
  bench [flags]     train the same works (MLP, BERT shapes) with goaccel and PyTorch,
                    alternating rounds; steps/s, time to first step, memory and ratios
  estimate [flags] MODEL_DIR
                    the memory plan per device of a BERT folder's training step (Adam):
                    --batch_size, --seq_len, --devices, --sharding, --mixed_precision, --device_memory;
                    exit status 3 when the plan does not fit --device_memory
  download [flags] REPO_ID[@REVISION] [FILES...]
                    a Hugging Face Hub repository into the cache huggingface_hub shares (hf download):
                    --repo_type, --revision, --include, --exclude, --local_dir; prints the snapshot folder

Run 'goaccel <command> --help' for a command's flags.
`

// run executes one command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "goaccel: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	return cmd(args[1:], stdout, stderr)
}

// parseFlags parses a command's flags. When ok is false the command returns code: 0 after
// --help, 2 after a bad flag or, with noArgs, after an unexpected positional argument.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer, noArgs bool) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0, false
		}
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return 2, false
	}
	if noArgs && fs.NArg() != 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %v\n", fs.Name(), fs.Args())
		return 2, false
	}
	return 0, true
}
