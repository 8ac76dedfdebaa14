package accelerator

import "strings"

// The package's errors read "accelerator: Op: detail": Op is the exported function or method
// that failed (New, Prepare, TrainStep.Run, ...), detail what went wrong and where. Helpers
// write "accelerator: detail"; the exported entry point adds its Op with wrapOp.

// opError is an error of an exported operation: its text names the package and the operation
// once, and it unwraps to the inner error for errors.Is and errors.As.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	return "accelerator: " + e.op + ": " + strings.TrimPrefix(e.err.Error(), "accelerator: ")
}

func (e *opError) Unwrap() error { return e.err }

// wrapOp returns err as an error of op; nil stays nil, and an error that already names op
// is returned as it is.
func wrapOp(op string, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), "accelerator: "+op+": ") {
		return err
	}
	return &opError{op: op, err: err}
}
