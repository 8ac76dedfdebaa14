// Command goaccel is goaccel's command line:
//
//	goaccel env              what this machine offers (versions, PJRT plugins, devices, the
//	                         backend accelerator.New picks and why, relevant environment
//	                         variables): paste it into bug reports
//	goaccel plot RUN_DIR     redraw RUN_DIR/curves.png and curves.svg from metrics.jsonl
//	goaccel launch ...       run a program as several processes, on one machine or several
//	                         (torchrun's and horovodrun's flags; see internal/launch)
//
// The command only parses flags and prints: the work is done by the accelerator and
// trainer packages.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commands maps a subcommand to its function, which gets the remaining arguments.
var commands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"env":    envCmd,
	"plot":   plotCmd,
	"launch": launchCmd,
}

const usage = `usage: goaccel <command> [arguments]

commands:
  env [--json]      print versions, PJRT plugins, devices per backend, the backend
                    accelerator.New would pick and why, and the relevant environment
  plot RUN_DIR      redraw RUN_DIR/curves.png and RUN_DIR/curves.svg from RUN_DIR/metrics.jsonl
  launch [flags] PROGRAM [ARGS...]
                    run PROGRAM as several processes (ranks), on this machine or several,
                    with torchrun's flags (--nproc_per_node, --nnodes, ...) or horovodrun's (-np, -H)

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
