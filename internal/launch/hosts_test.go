package launch

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestRemoteCommandPassesDiscoveryVariables: the command that ssh runs on another machine
// starts its launcher in the same folder with this machine's GOACCEL_HOME, GOACCEL_MPI_LIB and
// PJRT_PLUGIN_LIBRARY_PATH (when set, quoted for the shell), and nothing else of the
// environment; run by sh, the launcher sees the values unchanged.
func TestRemoteCommandPassesDiscoveryVariables(t *testing.T) {
	env := []string{"GOACCEL_HOME=/data/it's here", "GOACCEL_MPI_LIB=", "PJRT_PLUGIN_LIBRARY_PATH=/p/a:/p/b", "SECRET=x", "GOACCEL_HOME=/data/it's mine"}
	got := remoteCommand("/work dir", "/bin/goaccel", []string{"launch", "--node_rank", "1", "--", "prog", "a b"}, env)
	want := `cd '/work dir' && exec env 'GOACCEL_HOME=/data/it'\''s mine' PJRT_PLUGIN_LIBRARY_PATH=/p/a:/p/b /bin/goaccel launch --node_rank 1 -- prog 'a b'`
	if got != want {
		t.Errorf("remoteCommand =\n  %s\nwant\n  %s", got, want)
	}
	envBin, err := exec.LookPath("env")
	if err != nil {
		t.Skip("SKIPPING the shell half: no env program: ", err)
	}
	dir := t.TempDir()
	sh := exec.Command("sh", "-c", remoteCommand(dir, envBin, nil, env))
	sh.Env = []string{"PATH=/usr/bin:/bin"} // ssh's login environment, without this machine's variables
	out, err := sh.Output()
	if err != nil {
		t.Fatalf("sh -c: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, kv := range []string{"GOACCEL_HOME=/data/it's mine", "PJRT_PLUGIN_LIBRARY_PATH=/p/a:/p/b"} {
		if !slices.Contains(lines, kv) {
			t.Errorf("the remote launcher's environment lacks %s", kv)
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "GOACCEL_MPI_LIB=") || strings.HasPrefix(l, "SECRET=") {
			t.Errorf("the remote launcher's environment has %s", l)
		}
	}
}
