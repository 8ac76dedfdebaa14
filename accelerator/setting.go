package accelerator

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
)

// SettingError is a refused setting: New's error for a bad Config field or environment
// variable. It names where the value was set, as the user typed it: the environment
// variable ("$GOACCEL_MIXED_PRECISION") or the Config field ("Config.MixedPrecision"); a
// program whose flags set Config fields renames the field to its flag with NameFlags, so
// that its users read "--mixed_precision".
type SettingError struct {
	// Field is the Config field that the setting is ("MixedPrecision").
	Field string
	// Source is where the value came from: "$GOACCEL_MIXED_PRECISION",
	// "Config.MixedPrecision", or (after NameFlags) "--mixed_precision".
	Source string
	// Value is the value as it was set.
	Value string
	// Reason says what is wrong with it and what is valid.
	Reason string
}

// Error says where the value was set, the value, and what is wrong with it:
// `accelerator: $GOACCEL_DEVICES=64: 64 XLA CPU devices requested, above the limit of ...`.
func (e *SettingError) Error() string {
	v := e.Value
	if _, err := strconv.ParseFloat(v, 64); err != nil {
		v = strconv.Quote(v)
	}
	sep := "="
	if strings.HasPrefix(e.Source, "-") {
		sep = " "
	}
	return "accelerator: " + e.Source + sep + v + ": " + e.Reason
}

// NameFlags returns err with its SettingError naming the flag that set the Config field,
// for a program whose flags set Config fields: flags maps a field ("MixedPrecision") to its
// flag ("--mixed_precision"). A value that came from the environment keeps naming its
// variable; any other error is returned as it is.
func NameFlags(err error, flags map[string]string) error {
	var se *SettingError
	if !errors.As(err, &se) || se.Source != "Config."+se.Field || flags[se.Field] == "" {
		return err
	}
	named := *se
	named.Source = flags[se.Field]
	old, msg := strings.TrimPrefix(se.Error(), "accelerator: "), strings.TrimPrefix(named.Error(), "accelerator: ")
	return &renamedError{msg: strings.Replace(err.Error(), old, msg, 1), err: &named}
}

// renamedError is an error whose SettingError NameFlags renamed.
type renamedError struct {
	msg string
	err *SettingError
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

// setting is a Config field resolved with its environment variable: its value and where the
// value came from, so that an error names what the user set.
type setting struct {
	field, source, value string
}

// resolveSetting is Config field's value cfg, or, when it is empty, v's value.
func resolveSetting(field, cfg string, v *envvar.Var) setting {
	if cfg != "" || v == nil {
		return setting{field, "Config." + field, cfg}
	}
	return setting{field, "$" + v.Name, v.Value()}
}

// fromEnv is the setting of field that v's value gives.
func fromEnv(field string, v *envvar.Var) setting { return setting{field, "$" + v.Name, v.Value()} }

// refuse is the error refusing s: reason says what is wrong and what is valid.
func (s setting) refuse(format string, args ...any) *SettingError {
	return &SettingError{Field: s.field, Source: s.source, Value: s.value, Reason: fmt.Sprintf(format, args...)}
}

// positiveInt parses s as a count of at least 1.
func (s setting) positiveInt() (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s.value))
	if err != nil || n <= 0 {
		return 0, s.refuse("not a positive integer")
	}
	return n, nil
}
