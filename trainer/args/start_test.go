package args

import (
	"io"
	"strings"
	"testing"
)

// TestStart: the accelerator, the run directory (--output_dir) and the loggers of the shared
// flags, in one call; a bad --report_to or --backend is an error naming the flag.
func TestStart(t *testing.T) {
	tr := Defaults()
	tr.Backend, tr.OutputDir, tr.ReportTo = "go", t.TempDir(), "csv"
	r, err := tr.Start("prog", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if r.Dir != tr.OutputDir || r.Acc == nil || r.Interrupt == nil || len(r.Loggers) != 1 {
		t.Errorf("Start: %+v", r)
	}
	r.Close()
	for field, want := range map[string]string{"report_to": "--report_to", "backend": "--backend"} {
		bad := Defaults()
		bad.Backend, bad.OutputDir = "go", t.TempDir()
		if field == "report_to" {
			bad.ReportTo = "wandb"
		} else {
			bad.Backend = "tpu"
		}
		if _, err := bad.Start("prog", io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a bad --%s: %v", field, err)
		}
	}
}
