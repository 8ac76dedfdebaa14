package checkpoint

import "errors"

// ErrNoCheckpoint is returned (wrapped) by LoadLatest when the directory holds no checkpoint,
// the normal case for a run that starts from scratch. Test with errors.Is.
var ErrNoCheckpoint = errors.New("no checkpoint found")

// ErrCorrupt marks (wrapped) errors caused by a damaged or incomplete checkpoint: a missing or
// unreadable manifest, a file whose size or SHA-256 differs from the manifest, a file that does
// not parse. LoadLatest falls back to an older checkpoint on these errors only; other errors,
// such as a variable whose shape differs from the Store's, are returned at once. Test with
// errors.Is.
var ErrCorrupt = errors.New("checkpoint damaged")

// corruptError wraps a cause with the checkpoint path and ErrCorrupt.
type corruptError struct {
	path  string
	cause error
}

// Error names the checkpoint and the damage.
func (e *corruptError) Error() string {
	return "checkpoint " + e.path + " is damaged or incomplete: " + e.cause.Error()
}

// Unwrap makes errors.Is match both ErrCorrupt and the cause.
func (e *corruptError) Unwrap() []error { return []error{ErrCorrupt, e.cause} }

// corrupt returns a corruptError for the checkpoint at path.
func corrupt(path string, cause error) error {
	return &corruptError{path: path, cause: cause}
}
