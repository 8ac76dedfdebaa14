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
		want  bool
	}{
		{"nothing set", nil, true, false},
		{"keep", map[string]string{HostMallocEnv: "keep"}, true, true},
		{"keep, any case and spaces", map[string]string{HostMallocEnv: " Keep "}, true, true},
		{"keep, not glibc", map[string]string{HostMallocEnv: "keep"}, false, false},
		{"keep, user's GLIBC_TUNABLES win", map[string]string{HostMallocEnv: "keep", "GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}, true, false},
		{"system", map[string]string{HostMallocEnv: "system"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := needHostMallocReexec(func(k string) string { return tc.env[k] }, tc.glibc)
			if got != tc.want {
				t.Errorf("needHostMallocReexec = %v, want %v", got, tc.want)
			}
		})
	}
}

// hostMallocRole is the test binary's role (see TestMain) that prints its $GLIBC_TUNABLES.
const hostMallocRole = "print-glibc-tunables"

// TestHostMallocReexec starts this test binary as a program that imports the package and
// checks which glibc settings it runs with: none by default, goaccel's with
// GOACCEL_HOST_MALLOC=keep (it re-executed itself), and the user's own when they set
// GLIBC_TUNABLES.
func TestHostMallocReexec(t *testing.T) {
	if glibcVersion() == "" {
		t.Skip("SKIPPED: the C library is not glibc (or cgo is off): goaccel leaves malloc alone here")
	}
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"default", nil, ""},
		{"keep", []string{HostMallocEnv + "=keep"}, HostMallocTunables},
		{"system", []string{HostMallocEnv + "=system"}, ""},
		{"keep, user's own", []string{HostMallocEnv + "=keep", "GLIBC_TUNABLES=glibc.malloc.arena_max=3"}, "glibc.malloc.arena_max=3"},
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
