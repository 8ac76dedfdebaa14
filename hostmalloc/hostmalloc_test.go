package hostmalloc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
)

// TestEnvIsTheTables: the variable's name this package exports is the one in internal/envvar's
// table.
func TestEnvIsTheTables(t *testing.T) {
	if Env != envvar.HostMalloc.Name {
		t.Errorf("hostmalloc.Env %s, the table's %s", Env, envvar.HostMalloc.Name)
	}
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		glibc   bool
		reexec  bool
		warning string // a part of the warning; "" for none
	}{
		{"nothing set", nil, true, false, ""},
		{"system", map[string]string{Env: "system"}, true, false, ""},
		{"keep", map[string]string{Env: "keep"}, true, true, ""},
		{"keep, any case and spaces", map[string]string{Env: " Keep "}, true, true, ""},
		{"keep, already re-executed", map[string]string{Env: "keep", "GLIBC_TUNABLES": Tunables}, true, false, ""},
		{"keep, not glibc", map[string]string{Env: "keep"}, false, false, "not glibc"},
		{"keep, user's GLIBC_TUNABLES win", map[string]string{Env: "keep", "GLIBC_TUNABLES": "glibc.malloc.arena_max=4"},
			true, false, "GLIBC_TUNABLES is already set (glibc.malloc.arena_max=4)"},
		{"unknown value", map[string]string{Env: "fast"}, true, false, `$GOACCEL_HOST_MALLOC="fast" is not a valid value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reexec, warning := plan(func(k string) string { return tc.env[k] }, tc.glibc)
			if reexec != tc.reexec {
				t.Errorf("reexec = %v, want %v", reexec, tc.reexec)
			}
			if (tc.warning == "") != (warning == "") || !strings.Contains(warning, tc.warning) {
				t.Errorf("warning = %q, want one containing %q", warning, tc.warning)
			}
		})
	}
}

// TestPlanWarnsAsNewRefuses: plan warns about exactly the values that accelerator.New refuses
// (envvar.HostMalloc's check), naming the variable and the valid values.
func TestPlanWarnsAsNewRefuses(t *testing.T) {
	for _, v := range []string{"", "system", " System\t", "KEEP", "fast", "systemd", "system keep", "\nsystem", "keep\n"} {
		_, refused := envvar.HostMalloc.Parse(v)
		_, warning := plan(func(k string) string { return map[string]string{Env: v}[k] }, true)
		if (refused != nil) != (warning != "") {
			t.Errorf("%s=%q: accelerator.New's check says %v, plan warns %q: they disagree", Env, v, refused, warning)
		}
		if refused != nil && !strings.Contains(warning, `"system" or "keep"`) {
			t.Errorf("%s=%q: warning %q does not name the valid values", Env, v, warning)
		}
	}
}

// childRole, set to "print", makes the test binary print its $GLIBC_TUNABLES and exit (see
// TestMain): the child of TestReexec, a program that imports the package.
const childRole = "GOACCEL_TEST_HOSTMALLOC_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childRole) == "print" {
		fmt.Println("GLIBC_TUNABLES=[" + os.Getenv("GLIBC_TUNABLES") + "]")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestReexec starts this test binary as a program that imports the package and
// checks which glibc settings it runs with: none by default, goaccel's with
// GOACCEL_HOST_MALLOC=keep (it re-executed itself), and the user's own when they set
// GLIBC_TUNABLES.
func TestReexec(t *testing.T) {
	if glibcVersion() == "" {
		t.Skip("SKIPPED: the C library is not glibc (or cgo is off): goaccel leaves malloc alone here")
	}
	for _, tc := range []struct {
		name string
		env  []string
		want string
		warn string // part of the warning on stderr; "" for none
	}{
		{"default", nil, "", ""},
		{"keep", []string{Env + "=keep"}, Tunables, ""},
		{"system", []string{Env + "=system"}, "", ""},
		{"keep, user's own", []string{Env + "=keep", "GLIBC_TUNABLES=glibc.malloc.arena_max=3"},
			"glibc.malloc.arena_max=3", "GOACCEL_HOST_MALLOC=keep: ignored: GLIBC_TUNABLES is already set"},
		{"unknown value", []string{Env + "=fast"}, "", `$GOACCEL_HOST_MALLOC="fast" is not a valid value: use "system" or "keep"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GLIBC_TUNABLES=") && !strings.HasPrefix(kv, Env+"=") &&
					!strings.HasPrefix(kv, childRole+"=") {
					env = append(env, kv)
				}
			}
			cmd.Env = append(append(env, childRole+"=print"), tc.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if want := "GLIBC_TUNABLES=[" + tc.want + "]"; !strings.Contains(string(out), want) {
				t.Errorf("child printed\n%s\nwant a line %q", out, want)
			}
			if warned := strings.Contains(string(out), "WARNING"); warned != (tc.warn != "") ||
				!strings.Contains(string(out), tc.warn) {
				t.Errorf("child printed\n%s\nwant a warning containing %q (none if empty)", out, tc.warn)
			}
		})
	}
}

// TestDescribe: what `goaccel env` says for each setting.
func TestDescribe(t *testing.T) {
	if glibcVersion() == "" {
		t.Skip("SKIPPED: the C library is not glibc (or cgo is off): Describe names the C library's defaults")
	}
	for _, tc := range []struct {
		hostMalloc, tunables, want string
	}{
		{"", "", "with goaccel's block cache: requests of 256 KiB or more are kept for reuse"},
		{"keep", "", "with goaccel's block cache"}, // not re-executed: the cache stays on
		{" System", "", "defaults (GOACCEL_HOST_MALLOC=system)"},
		{"keep", Tunables, "freed memory kept for reuse (GOACCEL_HOST_MALLOC=keep: GLIBC_TUNABLES="},
		{"", "glibc.malloc.arena_max=2", "with the user's GLIBC_TUNABLES=glibc.malloc.arena_max=2"},
	} {
		t.Setenv(Env, tc.hostMalloc)
		t.Setenv("GLIBC_TUNABLES", tc.tunables)
		if got := Describe(); !strings.Contains(got, tc.want) {
			t.Errorf("%s=%q GLIBC_TUNABLES=%q: Describe() = %q, want it to contain %q", Env, tc.hostMalloc, tc.tunables, got, tc.want)
		}
	}
}
