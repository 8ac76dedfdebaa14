package trainer

import (
	"fmt"
	"strings"
)

// opError is an error of the trainer that wraps another one: its text is "trainer: <op>:
// <inner error>", the inner error whole (its own package prefix says where it came from), and
// it unwraps to the inner error for errors.Is and errors.As. A trainer error wrapped again
// adds its operation to the chain instead of repeating "trainer: ".
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	if inner, ok := e.err.(*opError); ok {
		return "trainer: " + e.op + ": " + strings.TrimPrefix(inner.Error(), "trainer: ")
	}
	return "trainer: " + e.op + ": " + e.err.Error()
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
