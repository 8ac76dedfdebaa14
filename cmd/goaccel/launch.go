package main

import (
	"io"

	"github.com/goaccel/goaccel/internal/launch"
)

// launchCmd is `goaccel launch [flags] PROGRAM [ARGS...]`: torchrun's and horovodrun's job,
// done by package internal/launch.
func launchCmd(args []string, stdout, stderr io.Writer) int {
	return launch.Main(args, stdout, stderr)
}
