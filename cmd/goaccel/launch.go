package main

import (
	"fmt"
	"io"
)

// launchCmd will start one process per machine (torchrun-style); today one process drives
// all the devices of a machine, so it says so instead of pretending.
func launchCmd(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "goaccel launch: not implemented yet: multi-process runs. One process already drives "+
		"every device of this machine: run your program directly (go run ./your/program), and use "+
		"GOACCEL_DEVICES or accelerator.Config.Devices to choose how many devices it uses.")
	return 2
}
