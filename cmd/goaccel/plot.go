package main

import (
	"fmt"
	"io"

	"github.com/goaccel/goaccel/trainer"
	flag "github.com/spf13/pflag"
)

// plotCmd redraws the training curves of a run directory.
func plotCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("goaccel plot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: goaccel plot RUN_DIR\n\nRedraws RUN_DIR/%s and RUN_DIR/%s from RUN_DIR/%s.\n",
			trainer.CurvesPNG, trainer.CurvesSVG, trainer.MetricsFile)
	}
	if code, ok := parseFlags(fs, args, stderr, false); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	files, err := trainer.Plot(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "goaccel plot:", err)
		return 1
	}
	for _, f := range files {
		fmt.Fprintln(stdout, "wrote", f)
	}
	return 0
}
