package trainer

import (
	"fmt"
	"strings"
)

// opError is an error of the trainer that wraps another package's: its text names the
// package once ("trainer: training step 12: the loss ..."), dropping the inner error's own
// package prefix, and it unwraps to the inner error for errors.Is and errors.As.
type opError struct {
	op  string
	err error
}

// innerPrefixes are the package prefixes dropped from wrapped errors' texts.
var innerPrefixes = []string{"trainer: ", "accelerator: ", "checkpoint: ", "data: ", "metrics: ", "bert: "}

func (e *opError) Error() string {
	msg := e.err.Error()
	for _, p := range innerPrefixes {
		if strings.HasPrefix(msg, p) {
			msg = msg[len(p):]
			break
		}
	}
	return "trainer: " + e.op + ": " + msg
}

func (e *opError) Unwrap() error { return e.err }

// wrapf wraps err (nil stays nil) with the operation that failed: "trainer: <op>: <err
// without its package prefix>", following the convention `pkg: operation: detail`.
func wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	op := format
	if len(args) > 0 {
		op = fmt.Sprintf(format, args...)
	}
	return &opError{op: op, err: err}
}
