package main

import (
	"io"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/internal/launch"
)

// launchCmd is `goaccel launch [flags] PROGRAM [ARGS...]`: torchrun's and horovodrun's job,
// done by package internal/launch.
func launchCmd(args []string, stdout, stderr io.Writer) int {
	return launch.Main(args, stdout, stderr)
}

// selfTestTimeout bounds each wait of a self-test rank on the others (the barrier, the
// all-reduce, the gather): one that never arrives, such as a rank whose machine's MPI traffic a
// firewall drops, is named after it instead of after the 30 minutes of a training run.
const selfTestTimeout = time.Minute

// The ranks of `goaccel launch --selftest` are this executable started with
// launch.SelfTestCommand; it is not listed in the usage.
func init() { commands[launch.SelfTestCommand] = selfTestRankCmd }

// selfTestRankCmd is one rank of `goaccel launch --selftest`: it joins the job the way a
// training program does, with accelerator.New (discovery, then MPI for several processes), and
// leaves the checks and the table to launch.RunSelfTestRank. It ends the process with
// accelerator.Exit, as MPI launchers expect.
func selfTestRankCmd(_ []string, stdout, stderr io.Writer) int {
	open := func() (launch.SelfTestJob, launch.SelfTestDiscovery, error) {
		acc, err := accelerator.New(accelerator.Config{Quiet: true, Timeout: selfTestTimeout})
		if err != nil {
			return nil, launch.SelfTestDiscovery{}, err
		}
		info := acc.Info()
		d := launch.SelfTestDiscovery{Backend: info.Backend, Plugin: info.Plugin.Path, Devices: info.Devices, Reason: info.Reason}
		if info.Backend == "xla" {
			d.Backend = "xla:" + string(info.Plugin.Kind)
		}
		return acc, d, nil
	}
	accelerator.Exit(launch.RunSelfTestRank(open, stdout, stderr))
	return 0 // not reached: Exit ends the process
}
