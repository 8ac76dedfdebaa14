package launch

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goaccel/goaccel/internal/mpi"
)

// hangWait is how long the launcher waits for its ranks' hang reports after the first one
// appeared (a rank timed out in a collective), before it stops them: the others write theirs
// within internal/mpi's alarm poll (half a second) of that rank's alarm, or when their own collective
// times out.
const hangWait = time.Second

// hangPoll is how often the launcher looks for its ranks' first hang report.
const hangPoll = 50 * time.Millisecond

// hasHangReport says whether the rank whose log folder is dir wrote a hang report.
func hasHangReport(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, mpi.HangFile))
	return err == nil
}

// hangLine is the first line of the hang report in dir without its prefix ("rank 1 waits in
// barrier #7 (WaitForEveryone at main.go:88), 0 bytes, for 5s"), or "".
func hangLine(dir string) string {
	f, err := os.Open(filepath.Join(dir, mpi.HangFile))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return ""
	}
	line, ok := strings.CutPrefix(sc.Text(), mpi.HangLinePrefix)
	if !ok {
		return ""
	}
	return line
}

// hangVerdict runs when a rank timed out in a collective (it wrote a hang report, first seen
// at since): it waits until hangWait after since for this node's other live ranks to write
// theirs (each rank writes its own on the alarm of the rank that timed out, or when its own
// collective times out), and prints one line that says where every rank of this node waits,
// naming the ranks that wrote none. It returns that line.
func (l *launcher) hangVerdict(workers []*worker, since time.Time) string {
	deadline := since.Add(hangWait)
	for time.Now().Before(deadline) {
		missing := false
		for _, w := range workers {
			if hangLine(w.logDir) == "" && !w.exited.Load() {
				missing = true
			}
		}
		if !missing {
			break
		}
		time.Sleep(hangPoll)
	}
	parts := make([]string, 0, len(workers))
	for _, w := range workers {
		line := hangLine(w.logDir)
		switch {
		case line != "" && len(parts) > 0:
			// "rank 0 in allgather #7 ..." after the first: the verdict reads as one sentence.
			line = strings.Replace(line, " waits in ", " in ", 1)
		case line == "" && w.exited.Load():
			what, _ := describe(w.cmd.ProcessState, nil)
			line = fmt.Sprintf("rank %d ended (%s) without a hang report", w.rank, what)
		case line == "":
			line = fmt.Sprintf("rank %d wrote no hang report within %v", w.rank, hangWait)
		}
		parts = append(parts, line)
	}
	v := "hang: " + strings.Join(parts, "; ")
	l.sayf("%s (reports: %s/rank_N/%s)", v, filepath.Dir(workers[0].logDir), mpi.HangFile)
	return v
}
