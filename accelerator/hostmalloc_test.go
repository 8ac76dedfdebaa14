package accelerator

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestNeedHostMallocReexec(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		glibc bool
		gpu   bool
		want  bool
	}{
		{"glibc, nothing set", nil, true, false, true},
		{"not glibc", nil, false, false, false},
		{"a GPU is visible", nil, true, true, false},
		{"user's GLIBC_TUNABLES win", map[string]string{"GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}, true, false, false},
		{"turned off", map[string]string{HostMallocEnv: "system"}, true, false, false},
		{"turned off, any case", map[string]string{HostMallocEnv: " System "}, true, false, false},
		{"other value keeps the settings", map[string]string{HostMallocEnv: "goaccel"}, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := needHostMallocReexec(func(k string) string { return tc.env[k] }, tc.glibc, tc.gpu)
			if got != tc.want {
				t.Errorf("needHostMallocReexec = %v, want %v", got, tc.want)
			}
		})
	}
}

// hostMallocRole is the test binary's role (see TestMain) that prints its $GLIBC_TUNABLES.
const hostMallocRole = "print-glibc-tunables"

// TestHostMallocReexec starts this test binary as a program that imports the package and
// checks which glibc settings it runs with: goaccel's by default (it re-executed itself),
// none with GOACCEL_HOST_MALLOC=system, and the user's own when they set GLIBC_TUNABLES.
func TestHostMallocReexec(t *testing.T) {
	if glibcVersion() == "" || gpuPresent() {
		t.Skip("SKIPPED: the C library is not glibc (or cgo is off), or a GPU is visible: goaccel leaves malloc alone here")
	}
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"default", nil, HostMallocTunables},
		{"turned off", []string{HostMallocEnv + "=system"}, ""},
		{"user's own", []string{"GLIBC_TUNABLES=glibc.malloc.arena_max=3"}, "glibc.malloc.arena_max=3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GLIBC_TUNABLES=") && !strings.HasPrefix(kv, HostMallocEnv+"=") &&
					!strings.HasPrefix(kv, workerRole+"=") {
					env = append(env, kv)
				}
			}
			cmd.Env = append(append(env, workerRole+"="+hostMallocRole), tc.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if want := "GLIBC_TUNABLES=[" + tc.want + "]"; !strings.Contains(string(out), want) {
				t.Errorf("child printed\n%s\nwant a line %q", out, want)
			}
		})
	}
}
