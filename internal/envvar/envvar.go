// Package envvar is goaccel's one table of environment variables: every variable that goaccel
// reads or writes (torchrun's, MPICH's, Open MPI's, Slurm's, the system's and goaccel's own) is
// declared in table.go with its name, its meaning, its parser and who sets it. Code elsewhere in
// the module reads and writes the environment only through this package (a test fails on any
// os.Getenv, os.LookupEnv, os.Environ, os.Setenv or os.Unsetenv outside it), the launcher writes
// with the same declarations the library reads, `goaccel env` prints the table and
// docs/environment.md is generated from it.
package envvar

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Setter names who sets a variable.
type Setter string

// The setters of the table.
const (
	User      Setter = "user"
	Launch    Setter = "goaccel launch"
	Torchrun  Setter = "torchrun"
	OpenMPI   Setter = "Open MPI's mpirun"
	Hydra     Setter = "MPICH's mpiexec"
	Srun      Setter = "srun"
	OS        Setter = "the OS"
	Goaccel   Setter = "goaccel, for a process it starts"
	Container Setter = "the container runtime"
	CIService Setter = "the CI service"
	Kubeflow  Setter = "Kubeflow's PyTorchJob and TrainJob"
)

// Kind is how a variable's value is parsed.
type Kind string

// The kinds of the table.
const (
	KindString     Kind = "string"
	KindInt        Kind = "integer"
	KindDuration   Kind = "duration"
	KindBool       Kind = "boolean"
	KindPaths      Kind = "path list"
	KindSlurmCount Kind = "Slurm count"
)

// Var is one variable of the table.
type Var struct {
	// Name is the variable's name, as in the environment.
	Name string
	// Meaning says in one line what the variable means.
	Meaning string
	// Kind is how the value is parsed.
	Kind Kind
	// SetBy lists who sets the variable.
	SetBy []Setter
	// Planned marks a variable declared for a coming feature: nothing reads it yet.
	Planned bool
	// Secret marks a credential (a job secret, an access token): what describes the
	// environment to a person (goaccel env, whose output goes into bug reports) says whether
	// it is set, never its value.
	Secret bool
}

// Lookup returns the variable's value and whether it is set.
func (v *Var) Lookup() (string, bool) { return os.LookupEnv(v.Name) }

// Value returns the variable's value, "" when unset.
func (v *Var) Value() string { return os.Getenv(v.Name) }

// Set sets the variable in this process's environment.
func (v *Var) Set(value string) error {
	if err := os.Setenv(v.Name, value); err != nil {
		return fmt.Errorf("envvar: Set: %s: %w", v.Name, err)
	}
	return nil
}

// Setters lists who sets the variable, separated by ", ".
func (v *Var) Setters() string {
	by := make([]string, len(v.SetBy))
	for i, s := range v.SetBy {
		by[i] = string(s)
	}
	return strings.Join(by, ", ")
}

// KV returns "NAME=value", an entry for an environment list.
func (v *Var) KV(value string) string { return v.Name + "=" + value }

// String is a variable read as it is.
type String struct{ *Var }

// Int is a variable holding a decimal integer.
type Int struct{ *Var }

// Int parses the value: set is false when the variable is unset or empty; err, which names the
// variable and has no package prefix (callers add theirs), when it is not an integer.
func (v Int) Int() (n int, set bool, err error) { return parseInt(v.Var, v.Value()) }

func parseInt(v *Var, s string) (int, bool, error) {
	if s == "" {
		return 0, false, nil
	}
	t := s
	if v.Kind == KindSlurmCount {
		// Slurm writes per-node counts as "2" or "2(x3)" (2 on each of 3 nodes): the count comes first.
		if i := strings.IndexByte(t, '('); i > 0 {
			t = t[:i]
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(t))
	if err != nil {
		return 0, true, fmt.Errorf("$%s=%q is not an integer", v.Name, s)
	}
	return n, true, nil
}

// Duration is a variable holding a positive duration (ParseDuration).
type Duration struct{ *Var }

// Duration parses the value with ParseDuration: set is false when the variable is unset or
// empty; err names the variable and has no package prefix.
func (v Duration) Duration() (d time.Duration, set bool, err error) {
	s := v.Value()
	if s == "" {
		return 0, false, nil
	}
	d, err = ParseDuration(s)
	if err != nil {
		return 0, true, fmt.Errorf("$%s=%w", v.Name, err)
	}
	return d, true, nil
}

// ParseDuration is goaccel's one duration parser: a positive Go duration such as "90s" or
// "30m", or a positive number of seconds such as "90" or "2.5". The error quotes s.
func ParseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f < math.MaxInt64/float64(time.Second) {
		return time.Duration(f * float64(time.Second)), nil
	}
	return 0, fmt.Errorf("%q is not a positive duration such as \"90s\" or \"30m\", or a number of seconds", s)
}

// Bool is a variable holding a boolean (strconv.ParseBool: 1, t, true, 0, f, false...).
type Bool struct{ *Var }

// Bool parses the value: false when unset or empty; err names the variable when the value is
// not a boolean.
func (v Bool) Bool() (bool, error) {
	s := v.Value()
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return false, fmt.Errorf("$%s=%q is not a boolean (1, true, 0 or false)", v.Name, s)
	}
	return b, nil
}

// Choice is a variable holding one of a few words, or nothing. Case and blanks (spaces and
// tabs) around the word are ignored; C code reading the same variable must compare the same way.
type Choice struct {
	*Var
	values []string
}

// Values returns the valid words.
func (v Choice) Values() []string { return slices.Clone(v.values) }

// Choice returns the variable's word (Parse of its value).
func (v Choice) Choice() (string, error) { return v.Parse(v.Value()) }

// Parse returns s as the variable's word: in lower case, without surrounding blanks, "" when
// s is empty; err names the variable, quotes s and lists the valid words when s is none of
// them (no package prefix: callers add theirs).
func (v Choice) Parse(s string) (string, error) {
	w := strings.ToLower(strings.Trim(s, " \t"))
	if w == "" || slices.Contains(v.values, w) {
		return w, nil
	}
	q := make([]string, len(v.values))
	for i, x := range v.values {
		q[i] = strconv.Quote(x)
	}
	return "", fmt.Errorf("$%s=%q is not a valid value: use %s, or leave it unset", v.Name, s, strings.Join(q, " or "))
}

// Paths is a variable holding a list of paths separated by ':'.
type Paths struct{ *Var }

// Paths returns the list's non-empty entries.
func (v Paths) Paths() []string { return splitPaths(v.Value()) }

func splitPaths(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ":") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// All returns the table, in its order (a copy: the entries are shared).
func All() []*Var { return slices.Clone(table) }

// Find returns the table's entry named name, or nil.
func Find(name string) *Var {
	for _, v := range table {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// Getenv returns the value of the table's variable name ("" when unset), for code that takes
// a getenv function. A name that is not in the table panics: every variable read has an entry.
func Getenv(name string) string {
	mustFind(name)
	return os.Getenv(name)
}

func mustFind(name string) *Var {
	v := Find(name)
	if v == nil {
		panic("envvar: " + name + " is not in the table (internal/envvar/table.go)")
	}
	return v
}

// Environ returns this process's environment, the start of a child process's (exec.Cmd.Env).
func Environ() []string { return os.Environ() }

// Lookup returns the value of name in env, a list of "NAME=value" (the last one wins, as in
// exec), and whether it is there. name must be in the table (else it panics).
func Lookup(env []string, name string) (string, bool) {
	mustFind(name)
	for i := len(env) - 1; i >= 0; i-- {
		if k, val, ok := strings.Cut(env[i], "="); ok && k == name {
			return val, true
		}
	}
	return "", false
}

// table is every variable, in declaration order (table.go).
var table []*Var

func declare(kind Kind, planned bool, name, meaning string, by []Setter) *Var {
	v := &Var{Name: name, Meaning: meaning, Kind: kind, SetBy: by, Planned: planned}
	table = append(table, v)
	return v
}

func str(name, meaning string, by ...Setter) String {
	return String{declare(KindString, false, name, meaning, by)}
}

func choice(name string, values []string, meaning string, by ...Setter) Choice {
	return Choice{declare(KindString, false, name, meaning, by), values}
}

func integer(name, meaning string, by ...Setter) Int {
	return Int{declare(KindInt, false, name, meaning, by)}
}

func slurmCount(name, meaning string, by ...Setter) Int {
	return Int{declare(KindSlurmCount, false, name, meaning, by)}
}

func duration(name, meaning string, by ...Setter) Duration {
	return Duration{declare(KindDuration, false, name, meaning, by)}
}

func boolean(name, meaning string, by ...Setter) Bool {
	return Bool{declare(KindBool, false, name, meaning, by)}
}

func paths(name, meaning string, by ...Setter) Paths {
	return Paths{declare(KindPaths, false, name, meaning, by)}
}

func planned(kind Kind, name, meaning string) *Var {
	return declare(kind, true, name, meaning, []Setter{User})
}

// secret marks v Secret.
func (v *Var) secret() *Var {
	v.Secret = true
	return v
}

// secret marks s Secret.
func (s String) secret() String {
	s.Var.secret()
	return s
}

// RankMark returns the first variable in env (a list of "NAME=value") that a launcher sets to
// tell a process that it already is one rank of a job (torchrun, goaccel launch, MPICH's
// mpiexec, Open MPI's mpirun, Slurm's srun), with its value; nil when none is set.
func RankMark(env []string) (*Var, string) {
	for _, v := range rankMarks {
		if val, ok := Lookup(env, v.Name); ok && val != "" {
			return v, val
		}
	}
	return nil, ""
}
