package testutil

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/launch"
)

// LaunchSelf runs this test binary under the launcher library as the ranks of a job, with no
// test selected (-test.run=^$), so that the binary's TestMain sends each rank to its worker:
// cfg gives NprocPerNode, Env (the whole environment: the caller's os.Environ() and its
// worker variables) and any other option; Program, Args, LogDir, Tee and the output are set
// here. It returns the job's output and the launcher's error, after at most 6 minutes.
func LaunchSelf(t testing.TB, cfg launch.Config) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cfg.Program, cfg.Args, cfg.LogDir, cfg.Tee = exe, []string{"-test.run=^$"}, t.TempDir(), 3
	cfg.Stdout, cfg.Stderr = &out, &out
	err = launch.Run(ctx, cfg)
	return out.String(), err
}
