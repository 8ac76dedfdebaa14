package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/home"
	flag "github.com/spf13/pflag"
)

// setupCmd installs XLA's CPU plugin and MPICH into goaccel's home folder (internal/home).
func setupCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("goaccel setup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "install into this folder instead of $GOACCEL_HOME (default $XDG_DATA_HOME/goaccel, "+
		"i.e. ~/.local/share/goaccel); programs then need GOACCEL_HOME set to it")
	pip := fs.String("pip", "", "the pip command to run (default: pip3 or pip from $PATH, else python3 -m pip)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: goaccel setup [--dir DIR] [--pip PIP]\n\n"+
			"Installs, with pip, what goaccel loads at run time into one folder:\n")
		for _, p := range home.Packages {
			fmt.Fprintf(stderr, "  %-18s %s (%s/)\n", p.Name, p.Spec, p.Subdir)
		}
		fmt.Fprintf(stderr, "Programs find them there (before the system's places) without further settings.\n"+
			"Running it again installs only what is missing.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr, true); !ok {
		return code
	}
	target, from, err := home.Dir()
	if *dir != "" {
		target, from, err = *dir, "--dir", nil
		if abs, e := filepath.Abs(*dir); e == nil {
			target = abs
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "goaccel setup: %v; name a folder with --dir\n", err)
		return 1
	}
	pipCmd, err := home.FindPip()
	if *pip != "" {
		pipCmd, err = strings.Fields(*pip), nil
	}
	if err != nil {
		fmt.Fprintf(stderr, "goaccel setup: nothing installed in %s: %s\n", target, setupErr(err))
		return 1
	}
	fmt.Fprintf(stdout, "goaccel setup: folder %s (from %s)\n", target, from)
	if v := envvar.Home.Value(); *dir == "" && v != "" && !filepath.IsAbs(v) {
		fmt.Fprintf(stdout, "goaccel setup: $%s=%s is relative: programs started in other folders look elsewhere; "+
			"export %s=%s\n", home.EnvVar, v, home.EnvVar, target)
	}
	results, err := home.Setup(target, pipCmd, stdout)
	for _, r := range results {
		state := "already installed"
		if r.Fresh {
			state = "installed"
		}
		fmt.Fprintf(stdout, "goaccel setup: %s %s: %s: %s\n", r.Name, r.Spec, state, r.Path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "goaccel setup: %s\n", setupErr(err))
		return 1
	}
	if cur, _, err := home.Dir(); err != nil || cur != target {
		fmt.Fprintf(stdout, "goaccel setup: programs look there only with GOACCEL_HOME=%s in their environment\n", target)
	} else {
		fmt.Fprintln(stdout, "goaccel setup: programs find them there; `goaccel env` shows what they pick")
	}
	return 0
}

// setupErr is err's text without the package's prefix, which "goaccel setup: " replaces.
func setupErr(err error) string { return strings.TrimPrefix(err.Error(), "home: setup: ") }
