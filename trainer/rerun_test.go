package trainer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestChooseRunDirFindsTheInterruptedRun: without --output_dir, a program gets a new
// runs/<name>-<time>; once markInterrupted has marked it, the same arguments (in any
// --output_dir spelling) choose it again, other arguments or another name do not, and after
// clearInterrupted a new directory is chosen.
func TestChooseRunDirFindsTheInterruptedRun(t *testing.T) {
	acc := accOn(t, 1)
	t.Chdir(t.TempDir())
	oldArgs := os.Args
	defer func() { os.Args = oldArgs }()
	os.Args = []string{"prog", "--epochs", "2"}

	first, err := ChooseRunDir(acc, "", "prog")
	if err != nil || !strings.HasPrefix(first, filepath.Join("runs", "prog-")) {
		t.Fatalf("ChooseRunDir = %q, %v; want runs/prog-<time>", first, err)
	}
	if got, _ := ChooseRunDir(acc, "mine", "prog"); got != "mine" {
		t.Errorf("a given directory became %q", got)
	}
	if err := os.MkdirAll(first, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := markInterrupted(acc, first, syscall.SIGINT, 7); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(first, interruptedFile))
	if !strings.Contains(string(raw), "--output_dir "+first) || !strings.Contains(string(raw), `"SIGINT"`) {
		t.Errorf("interrupted.json lacks the resume command or the signal:\n%s", raw)
	}
	for _, c := range []struct {
		args []string
		name string
		same bool
	}{
		{[]string{"--epochs", "2"}, "prog", true},
		{[]string{"--epochs", "2", "--output-dir=x"}, "prog", true},
		{[]string{"--epochs", "3"}, "prog", false},
		{[]string{"--epochs", "2"}, "other", false},
	} {
		t.Run(fmt.Sprintf("%s %v", c.name, c.args), func(t *testing.T) {
			os.Args = append([]string{"prog"}, c.args...)
			got, err := ChooseRunDir(acc, "", c.name)
			if err != nil {
				t.Fatal(err)
			}
			if (got == first) != c.same {
				t.Errorf("%s %v chose %s; the interrupted run is %s (want it: %v)", c.name, c.args, got, first, c.same)
			}
		})
	}
	os.Args = []string{"prog", "--epochs", "2"}
	if err := clearInterrupted(acc, first); err != nil {
		t.Fatal(err)
	}
	if err := clearInterrupted(acc, first); err != nil {
		t.Errorf("clearing twice: %v", err)
	}
	if got, _ := ChooseRunDir(acc, "", "prog"); got == first {
		t.Errorf("a run that ended is chosen again: %s", got)
	}
}

// TestResumeCommandLine: the program's own arguments, --output_dir added once, quoted for a shell.
func TestResumeCommandLine(t *testing.T) {
	oldArgs := os.Args
	defer func() { os.Args = oldArgs }()
	os.Args = []string{"/bin/prog", "--data_dir", "my data", "--epochs=2"}
	if got, want := resumeCommand("runs/x"), "/bin/prog --data_dir 'my data' --epochs=2 --output_dir runs/x"; got != want {
		t.Errorf("resumeCommand = %q, want %q", got, want)
	}
	os.Args = []string{"/bin/prog", "--output-dir", "d"}
	if got, want := resumeCommand("d"), "/bin/prog --output-dir d"; got != want {
		t.Errorf("resumeCommand = %q, want %q", got, want)
	}
}

// TestResumeCommandHoldsNoToken: --token's value (trainer/args' Hub token), in any spelling,
// is in neither the resume command nor the interruption mark's arguments.
func TestResumeCommandHoldsNoToken(t *testing.T) {
	oldArgs := os.Args
	defer func() { os.Args = oldArgs }()
	os.Args = []string{"/bin/prog", "--token", "hf_secret1", "--epochs=2", "--token=hf_secret2", "--output_dir", "d"}
	if got, want := resumeCommand("d"), "/bin/prog --epochs=2 --output_dir d"; got != want {
		t.Errorf("resumeCommand = %q, want %q", got, want)
	}
	if got := withoutToken(os.Args[1:]); strings.Contains(strings.Join(got, " "), "hf_secret") {
		t.Errorf("the mark's arguments %v", got)
	}
}
