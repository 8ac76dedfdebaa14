package trainer

// Logger receives the records of a run: one per training log step and one per evaluation.
// metrics.jsonl, written by Fit and by Run (a Logger too), is the one every run directory
// has; Config.Loggers adds others (NewTensorBoardLogger, NewCSVLogger, a tracking service),
// and a hand-written loop gives them to Run.AddLoggers, or logs to any of them the same way.
type Logger interface {
	// Log records r. An error stops Fit.
	Log(r Record) error
	// Close flushes and releases what the logger holds.
	Close() error
}

var _ Logger = (*metricsWriter)(nil)
