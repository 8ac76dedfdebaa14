package trainer

import (
	"fmt"
	"strings"
	"testing"
)

// TestReportToNoneAndAll: Hugging Face's report_to spellings. "none" adds no logger (the run
// still writes metrics.jsonl), "all" every logger goaccel has (TensorBoard and CSV); either
// given with other names is refused, naming both.
func TestReportToNoneAndAll(t *testing.T) {
	kinds := func(ls []Logger) string {
		var s []string
		for _, l := range ls {
			s = append(s, fmt.Sprintf("%T", l))
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct{ names, want string }{
		{"none", ""}, {"None", ""}, {"all", "*trainer.TensorBoardLogger,*trainer.CSVLogger"},
		{"jsonl", ""}, {"csv", "*trainer.CSVLogger"},
	} {
		ls, err := ReportTo(c.names)
		if err != nil || kinds(ls) != c.want {
			t.Errorf("ReportTo(%q): loggers %q, error %v; want %q", c.names, kinds(ls), err, c.want)
		}
	}
	for _, c := range []struct{ names, want string }{
		{"none,csv", `"none" means no logger but "none,csv" names others too`},
		{"csv,all", `"all" means every logger but "csv,all" names others too`},
		{"wandb", `unknown logger "wandb" in "wandb" (known: jsonl, tensorboard, csv, all, none)`},
	} {
		if _, err := ReportTo(c.names); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReportTo(%q): %v, want an error containing %q", c.names, err, c.want)
		}
	}
}
