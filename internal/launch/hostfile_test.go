package launch

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestHostfile: Open MPI's and Horovod's "host slots=N", MPICH's "host:N" and a bare host (one
// slot), with comments and blank lines, give the hosts -H gives; -np fills their slots in
// order; a bad line is an error naming the file and the line.
func TestHostfile(t *testing.T) {
	cases := []struct {
		name, text string
		np         int
		want       []hostSlots // nil: an error containing err
		err        string
	}{
		{name: "open mpi", text: "localhost slots=2\nother slots=4\n",
			want: []hostSlots{{"localhost", 2}, {"other", 4}}},
		{name: "mpich", text: "localhost:2\nother:3\n", want: []hostSlots{{"localhost", 2}, {"other", 3}}},
		{name: "bare hosts", text: "localhost\nother\n", want: []hostSlots{{"localhost", 1}, {"other", 1}}},
		{name: "mixed, comments, blanks, tabs", text: "# the cluster\n\n  localhost slots=2   # this machine\n\tother:2\n\n#end\nthird\n",
			want: []hostSlots{{"localhost", 2}, {"other", 2}, {"third", 1}}},
		{name: "-np fills in order", text: "localhost slots=2\nother slots=2\nthird slots=2\n", np: 3,
			want: []hostSlots{{"localhost", 2}, {"other", 1}}},
		{name: "no final newline", text: "localhost slots=1", want: []hostSlots{{"localhost", 1}}},
		{name: "zero slots", text: "localhost slots=2\nother slots=0\n", err: ":2: \"other slots=0\": slots=\"0\" is not a positive number"},
		{name: "not a number", text: "localhost:two\n", err: ":1: \"localhost:two\": \"localhost:two\" is not host:N"},
		{name: "unknown key", text: "# x\nlocalhost max_slots=4\n", err: ":2: \"localhost max_slots=4\": unknown \"max_slots=4\": only slots=N is read"},
		{name: "slots twice", text: "localhost:2 slots=2\n", err: ":1: \"localhost:2 slots=2\": give the slots once"},
		{name: "empty", text: "# nothing\n\n", err: "lists no host"},
		{name: "too many ranks", text: "localhost slots=2\n", np: 3, err: "-np 3 is more than the 2 slots of --hostfile"},
		{name: "first host elsewhere", text: "elsewhere.invalid slots=2\n", err: ": the first host (elsewhere.invalid) must be this machine"},
	}
	dir := t.TempDir()
	for i, c := range cases {
		path := filepath.Join(dir, "hosts"+string(rune('a'+i)))
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := parseHostfile(path, c.np)
		if c.want != nil {
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s: got %v, %v; want %v", c.name, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming %s and %q", c.name, err, path, c.err)
		}
	}
	if _, err := parseHostfile(filepath.Join(dir, "missing"), 0); err == nil || !strings.Contains(err.Error(), "--hostfile: open "+dir) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestHostfileIsH: --hostfile gives the launcher the same invocation as -H with the same
// hosts (nodes, slots, what the other hosts' launchers get), and the two are not combined.
func TestHostfileIsH(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte("localhost slots=2\n127.0.0.1:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	viaH, err := parseArgs([]string{"-np", "3", "-H", "localhost:2,127.0.0.1:2", "--tee", "3", "prog", "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	viaFile, err := parseArgs([]string{"-np", "3", "--hostfile", path, "--tee", "3", "prog", "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(viaH.hosts, viaFile.hosts) || !reflect.DeepEqual(viaH.forward, viaFile.forward) ||
		viaH.cfg.NNodes != viaFile.cfg.NNodes || viaH.cfg.NprocPerNode != viaFile.cfg.NprocPerNode {
		t.Errorf("-H gives %+v, --hostfile %+v", viaH, viaFile)
	}
	for _, args := range [][]string{{"-H", "localhost:1", "--hostfile", path, "prog"}, {"--hostfile", path, "--nnodes", "2", "prog"}} {
		if _, err := parseArgs(args, nil); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

// TestElasticHostfile: --hostfile with --nnodes MIN:MAX makes the listed hosts' job elastic:
// this launcher is the master, the hosts' launchers join it without a node rank, and the job
// runs on them (here two hosts of this machine); MIN:MAX that excludes the host count is refused.
func TestElasticHostfile(t *testing.T) {
	self, _ := os.Executable()
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("localhost slots=1\n127.0.0.1 slots=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inv, err := parseArgs([]string{"--hostfile", hosts, "--nnodes", "1:3", "--rdzv_conf", "last_call_timeout=1", "x"}, nil)
	if err != nil || inv.cfg.MinNodes != 1 || inv.cfg.NNodes != 3 || inv.cfg.NodeRank != 0 || len(inv.hosts) != 2 {
		t.Fatalf("parseArgs: %v %+v", err, inv)
	}
	if _, err := parseArgs([]string{"--hostfile", hosts, "--nnodes", "3:4", "x"}, nil); err == nil ||
		!strings.Contains(err.Error(), "--nnodes 3:4 with --hostfile of 2 host(s): want MIN <= 2 <= MAX") {
		t.Errorf("--nnodes 3:4 with 2 hosts: %v", err)
	}
	cmd, dir, out := launcherCmd(t, "env", "--hostfile", hosts, "--nnodes", "1:2", "--no_mpi_check", self)
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for rank := range 2 {
		env := readEnvFile(t, filepath.Join(dir, "env_"+strconv.Itoa(rank)))
		if env["WORLD_SIZE"] != "2" || env["NODE_RANK"] != strconv.Itoa(rank) {
			t.Errorf("rank %d: %v", rank, env)
		}
	}
	if !strings.Contains(out.String(), "the elastic job (--nnodes 1:2) starts on 2 node(s)") {
		t.Errorf("no word of the elastic job:\n%s", out)
	}
}
