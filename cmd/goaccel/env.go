package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/hostmalloc"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/home"
	"github.com/goaccel/goaccel/internal/mpi"
	"github.com/goaccel/goaccel/internal/plugins"
	"github.com/goaccel/goaccel/trainer"
	flag "github.com/spf13/pflag"
)

// envReport is what `goaccel env` prints.
type envReport struct {
	Versions trainer.Versions `json:"versions"`
	// Home is goaccel's install folder, which `goaccel setup` fills.
	Home    homeReport           `json:"home"`
	Plugins []accelerator.Plugin `json:"plugins"`
	// NVIDIA is, for each CUDA plugin found (by path), the NVIDIA libraries accelerator.New
	// would point it at, and why.
	NVIDIA map[string]accelerator.NVIDIALibraries `json:"nvidia_libraries,omitempty"`
	// Backends lists every backend that can be opened here with its device count.
	Backends []backendReport `json:"backends"`
	// Choice is what accelerator.New(accelerator.Config{}) picks in this environment.
	Choice      backendReport `json:"default_choice"`
	NvidiaFiles []string      `json:"nvidia_device_files"`
	// MPI is the library runs over several processes would load (goaccel launch, mpirun).
	MPI mpiReport `json:"mpi"`
	// HostMalloc says whether goaccel's glibc malloc settings are in effect (hostmalloc.Describe).
	HostMalloc string   `json:"host_malloc"`
	Env        []envVar `json:"environment"`
}

// homeReport is goaccel's home folder and what `goaccel setup` installed there.
type homeReport struct {
	Dir       string   `json:"dir,omitempty"`
	From      string   `json:"from,omitempty"`
	Installed []string `json:"installed"`
	Missing   []string `json:"missing"`
	Error     string   `json:"error,omitempty"`
}

// mpiReport is the MPI library found, or why none was.
type mpiReport struct {
	Library string `json:"library,omitempty"`
	ABI     string `json:"abi,omitempty"`
	From    string `json:"from,omitempty"`
	Error   string `json:"error,omitempty"`
}

type backendReport struct {
	Backend string `json:"backend"`
	Plugin  string `json:"plugin,omitempty"`
	Devices int    `json:"devices,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Plan    string `json:"plan,omitempty"`
	Error   string `json:"error,omitempty"`
}

// envVar is one variable of goaccel's table (internal/envvar) and its value here.
type envVar struct {
	Name    string   `json:"name"`
	Value   *string  `json:"value"` // nil: unset, or Secret
	Meaning string   `json:"meaning"`
	Kind    string   `json:"kind"`
	SetBy   []string `json:"set_by"`
	Planned bool     `json:"planned,omitempty"` // declared for a coming feature, not read yet
	Set     bool     `json:"set"`
	Secret  bool     `json:"secret,omitempty"` // a credential: its value is never shown
}

// open asks accelerator.New for a backend and describes what it got; failures are reported,
// not fatal: a bug report needs them most.
func open(cfg accelerator.Config, name string) backendReport {
	cfg.Quiet = true
	r := backendReport{Backend: name}
	acc, err := accelerator.New(cfg)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer acc.Close()
	info := acc.Info()
	r.Devices, r.Reason, r.Plan, r.Plugin = info.Available, info.Reason, acc.Plan(), info.Plugin.Path
	if info.Backend == "xla" {
		r.Backend = "xla:" + string(info.Plugin.Kind)
	} else {
		r.Backend = info.Backend
	}
	return r
}

func collectEnv() envReport {
	rep := envReport{Versions: trainer.BuildVersions(), Plugins: plugins.Find()}
	if dir, from, err := home.Dir(); err != nil {
		rep.Home.Error = err.Error()
	} else {
		rep.Home.Dir, rep.Home.From = dir, from
		for _, p := range home.Packages {
			if p.Installed(dir) {
				rep.Home.Installed = append(rep.Home.Installed, p.Spec)
			} else {
				rep.Home.Missing = append(rep.Home.Missing, p.Spec)
			}
		}
	}
	for _, p := range rep.Plugins { // before opening any: New adds the CUDA data dir to XLA_FLAGS
		if p.Kind == plugins.CUDA {
			if rep.NVIDIA == nil {
				rep.NVIDIA = map[string]accelerator.NVIDIALibraries{}
			}
			rep.NVIDIA[p.Path] = plugins.NVIDIALibraries(p)
		}
	}
	rep.Choice = open(accelerator.Config{}, "default")
	rep.Backends = append(rep.Backends, open(accelerator.Config{Backend: "go"}, "go"))
	for _, p := range rep.Plugins {
		rep.Backends = append(rep.Backends, open(accelerator.Config{Backend: p.Path}, "xla:"+string(p.Kind)))
	}
	rep.NvidiaFiles, _ = filepath.Glob("/dev/nvidia[0-9]*")
	if lib, err := mpi.Find(); err != nil {
		rep.MPI.Error = err.Error()
	} else {
		rep.MPI = mpiReport{Library: lib.Path, ABI: lib.ABI.String(), From: lib.Source}
	}
	rep.HostMalloc = hostmalloc.Describe()
	for _, t := range envvar.All() {
		v := envVar{Name: t.Name, Meaning: t.Meaning, Kind: string(t.Kind), Planned: t.Planned, Secret: t.Secret}
		for _, s := range t.SetBy {
			v.SetBy = append(v.SetBy, string(s))
		}
		if val, ok := t.Lookup(); ok {
			v.Set = true
			if !t.Secret { // a bug report is no place for a credential: set or unset only
				v.Value = &val
			}
		}
		rep.Env = append(rep.Env, v)
	}
	return rep
}

// envCmd prints the environment report, as text or JSON.
func envCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("goaccel env", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if code, ok := parseFlags(fs, args, stderr, true); !ok {
		return code
	}
	rep := collectEnv()
	if *asJSON {
		raw, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			fmt.Fprintln(stderr, "goaccel env:", err)
			return 1
		}
		fmt.Fprintln(stdout, string(raw))
		return 0
	}
	printEnv(stdout, rep)
	return 0
}

func printEnv(w io.Writer, rep envReport) {
	v := rep.Versions
	fmt.Fprintln(w, "Copy-and-paste the text below in your bug report.")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "- goaccel version: %s\n", v.Goaccel)
	fmt.Fprintf(w, "- GoMLX version: %s (compute %s, go-xla %s)\n", v.GoMLX, v.Compute, v.GoXLA)
	fmt.Fprintf(w, "- Go version: %s\n", v.Go)
	fmt.Fprintf(w, "- OS/CPU: %s/%s, %d CPU(s)\n", v.OS, v.Arch, v.CPUs)
	if len(rep.NvidiaFiles) > 0 {
		fmt.Fprintf(w, "- NVIDIA device files: %s\n", strings.Join(rep.NvidiaFiles, " "))
	} else {
		fmt.Fprintln(w, "- NVIDIA device files: none (no GPU visible)")
	}
	if h := rep.Home; h.Error != "" {
		fmt.Fprintf(w, "- goaccel home: none: %s\n", h.Error)
	} else {
		fmt.Fprintf(w, "- goaccel home: %s (from %s)", h.Dir, h.From)
		if len(h.Installed) > 0 {
			fmt.Fprintf(w, "; installed by goaccel setup: %s", strings.Join(h.Installed, ", "))
		}
		if len(h.Missing) > 0 {
			fmt.Fprintf(w, "; not installed: %s (goaccel setup installs them)", strings.Join(h.Missing, ", "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "- PJRT plugins found:")
	if len(rep.Plugins) == 0 {
		fmt.Fprintf(w, "    none (looked in %s)\n", plugins.SearchedPlaces)
		fmt.Fprintf(w, "    to install XLA's CPU plugin: %s\n", plugins.InstallHint)
	}
	for _, p := range rep.Plugins {
		fmt.Fprintf(w, "    %-5s %s (from %s)\n", p.Kind, p.Path, p.From)
		if l, ok := rep.NVIDIA[p.Path]; ok {
			fmt.Fprintf(w, "          %s\n", l.Describe())
		}
	}
	fmt.Fprintln(w, "- Devices per backend:")
	for _, b := range rep.Backends {
		where := " (pure Go)"
		if b.Plugin != "" {
			where = " " + b.Plugin
		}
		if b.Error != "" {
			fmt.Fprintf(w, "    %s%s: cannot be opened: %s\n", b.Backend, where, b.Error)
			continue
		}
		hint := ""
		if b.Backend == "xla:cpu" {
			hint = " (host devices: GOACCEL_DEVICES or accelerator.Config.Devices sets how many)"
		}
		fmt.Fprintf(w, "    %s%s: %d device(s)%s\n", b.Backend, where, b.Devices, hint)
	}
	if c := rep.Choice; c.Error != "" {
		fmt.Fprintf(w, "- accelerator.New would fail: %s\n", c.Error)
	} else {
		fmt.Fprintf(w, "- accelerator.New would pick: %s", c.Backend)
		if c.Plugin != "" {
			fmt.Fprintf(w, " (%s)", c.Plugin)
		}
		fmt.Fprintf(w, ", %d device(s): %s\n", c.Devices, c.Reason)
	}
	if m := rep.MPI; m.Error != "" {
		fmt.Fprintf(w, "- MPI (for several processes): not found: %s\n", m.Error)
	} else {
		fmt.Fprintf(w, "- MPI (for several processes): %s (%s ABI, from %s)\n", m.Library, m.ABI, m.From)
	}
	fmt.Fprintf(w, "- Host memory: %s\n", rep.HostMalloc)
	fmt.Fprintln(w, "- Environment (every variable goaccel reads or writes; docs/environment.md):")
	for _, e := range rep.Env {
		val := "(unset)"
		switch {
		case e.Secret && e.Set:
			val = "(set, not shown)"
		case e.Value != nil:
			val = fmt.Sprintf("%q", *e.Value)
		}
		meaning := e.Meaning
		if e.Planned {
			meaning = "planned, not read yet: " + meaning
		}
		if e.Secret {
			meaning = "secret, its value never shown: " + meaning
		}
		fmt.Fprintf(w, "    %s=%s  %s (set by %s)\n", e.Name, val, meaning, strings.Join(e.SetBy, ", "))
	}
}
