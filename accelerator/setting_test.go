package accelerator

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/mpi"
)

// TestBadVariablesAreNamed: every variable of the environment table that a user sets either
// has a bad value whose error names the variable (as "$NAME=value", the value as the user
// typed it), or says why no value of it is goaccel's to refuse. A variable added to the table
// without either fails the test.
func TestBadVariablesAreNamed(t *testing.T) {
	newGo := func(t *testing.T) error { return tryNew(t, Config{Backend: "go"}) }
	bad := map[string]struct {
		value string
		run   func(t *testing.T) error // default: New on the pure-Go backend
	}{
		envvar.Timeout.Name:             {"soon", nil},
		envvar.CollectiveTimeout.Name:   {"5m", nil},
		envvar.Verify.Name:              {"often", nil},
		envvar.MixedPrecision.Name:      {"fp8", nil},
		envvar.Sharding.Name:            {"fsdp", nil},
		envvar.GradientCompression.Name: {"int8", nil},
		envvar.Debug.Name:               {"maybe", nil},
		envvar.DeviceMemory.Name:        {"lots", nil},
		envvar.HostMalloc.Name:          {"bogus", nil},
		envvar.Devices.Name:             {"0", nil},
		envvar.MaxCPUDevices.Name:       {"x", nil},
		envvar.Backend.Name:             {"tpu", func(t *testing.T) error { return tryNew(t, Config{}) }},
		envvar.Timeline.Name: {filepath.Join(regularFile(t), "trace"), func(t *testing.T) error {
			return tryNew(t, Config{Backend: "go"})
		}},
		envvar.XLAFlags.Name: {"--xla_force_host_platform_device_count=100000", func(t *testing.T) error {
			return tryNew(t, Config{Backend: cpuPlugin(t)})
		}},
		envvar.MPILib.Name:         {"/nonexistent/libmpi.so.12", func(*testing.T) error { _, err := mpi.Find(); return err }},
		envvar.MPIABI.Name:         {"mvapich", func(*testing.T) error { _, err := mpi.Find(); return err }},
		envvar.TF32.Name:           {"maybe", nil},
		envvar.StragglerEvery.Name: {"-3", nil},
		envvar.MemoryFraction.Name: {"1.5", nil},
		envvar.Preallocate.Name:    {"sometimes", nil},
	}
	notOurs := map[string]string{
		envvar.BcastAlgorithm.Name:       "MPICH's own, checked by MPICH's MPI_Init",
		envvar.AllreduceAlgorithm.Name:   "MPICH's own, checked by MPICH's MPI_Init",
		envvar.BarrierAlgorithm.Name:     "MPICH's own, checked by MPICH's MPI_Init",
		envvar.MPI4PyLibMPI.Name:         "mpi4py's own; goaccel launch passes it on",
		envvar.LDLibraryPath.Name:        "a list of folders: a missing one is skipped, as the dynamic linker does",
		envvar.Path.Name:                 "a list of folders: a missing one is skipped, as the shell does",
		envvar.HangDir.Name:              "any folder: the hang report is written there when a wait times out, and the timeout's error names it",
		envvar.PluginPath.Name:           "a list of places: a missing one is skipped, and goaccel env shows what was found",
		envvar.NoAutoInstall.Name:        "GoMLX's own; goaccel never asks it to download",
		envvar.CUDAVisibleDevices.Name:   "CUDA's own list of GPUs",
		envvar.VirtualEnv.Name:           "a folder whose site-packages discovery searches when it has one",
		envvar.GoMaxProcs.Name:           "the Go runtime's own",
		envvar.OMPNumThreads.Name:        "OpenMP's own",
		envvar.Home.Name:                 "any folder: goaccel setup creates it, and discovery skips what it lacks",
		envvar.XDGDataHome.Name:          "a relative value is ignored, as the XDG specification says",
		envvar.GlibcTunables.Name:        "glibc's own",
		envvar.LaunchDebug.Name:          "read by goaccel launch's PMI server (internal/launch)",
		envvar.BenchPython.Name:          "any program: goaccel bench names it when it cannot run it",
		envvar.BenchCPUProfile.Name:      "any file: goaccel bench's worker names it when it cannot write it",
		envvar.CI.Name:                   "any non-empty value means CI",
		envvar.JobSecret.Name:            "goaccel launch's, not New's: the launcher refuses one under 16 bytes naming the variable, and the master refuses a launcher with another one",
		envvar.GoPJRTCUDAChecks.Name:     "go-xla's own; goaccel sets it to 0 when it loads NVIDIA's libraries itself",
		envvar.HFHubCache.Name:           "package hub's, not New's: any folder, created when a file is downloaded (hub TestCacheFolderInHuggingFaceHubsOrder)",
		envvar.HuggingFaceHubCache.Name:  "package hub's, not New's: any folder, as HF_HUB_CACHE",
		envvar.HFHome.Name:               "package hub's, not New's: any folder, as HF_HUB_CACHE",
		envvar.XDGCacheHome.Name:         "package hub's, not New's: any folder, as HF_HUB_CACHE",
		envvar.HFEndpoint.Name:           "package hub's, not New's: hub.New refuses a value that is not an http(s) URL naming it (hub TestBadVariablesAreErrorsNamingThem)",
		envvar.HFToken.Name:              "package hub's, not New's: a token the Hub refuses is an error (hub TestHubErrors)",
		envvar.HFHubToken.Name:           "package hub's, not New's: as HF_TOKEN",
		envvar.HFTokenPath.Name:          "package hub's, not New's: a missing file means no token, as huggingface_hub reads it",
		envvar.HFHubOffline.Name:         "package hub's, not New's: hub.New refuses a value that is neither true nor false naming it (hub TestBadVariablesAreErrorsNamingThem)",
		envvar.TransformersOffline.Name:  "package hub's, not New's: as HF_HUB_OFFLINE",
		envvar.HFHubEtagTimeout.Name:     "package hub's, not New's: hub.New refuses a value that is not whole seconds naming it (hub TestBadVariablesAreErrorsNamingThem)",
		envvar.HFHubDownloadTimeout.Name: "package hub's, not New's: as HF_HUB_ETAG_TIMEOUT",
		envvar.TorchPython.Name:          "tests only: the model packages' tests run it and fail naming it when it cannot load their folders",
		envvar.SlurmConf.Name:            "Slurm's own: its commands name a slurm.conf they cannot read",
		envvar.SlurmctldPort.Name:        "scripts/slurm_cluster.sh's, which slurmctld refuses when it cannot bind",
		envvar.SlurmdPort.Name:           "scripts/slurm_cluster.sh's, which slurmd refuses when it cannot bind",
	}
	// torchrun's PET_* are goaccel launch's flags' defaults, not New's: a bad value is an error
	// naming the variable (internal/launch TestPETVariables).
	for _, v := range []envvar.String{envvar.PETNNodes, envvar.PETNprocPerNode, envvar.PETMasterAddr, envvar.PETRdzvBackend,
		envvar.PETRdzvEndpoint, envvar.PETRdzvID, envvar.PETRdzvConf, envvar.PETStandalone} {
		notOurs[v.Name] = "goaccel launch's: internal/launch TestPETVariables"
	}
	for _, v := range []envvar.Int{envvar.PETNodeRank, envvar.PETMasterPort, envvar.PETMaxRestarts} {
		notOurs[v.Name] = "goaccel launch's: internal/launch TestPETVariables"
	}
	for _, v := range envvar.All() {
		if v.Planned || !slices.Contains(v.SetBy, envvar.User) {
			continue
		}
		c, ok := bad[v.Name]
		if !ok {
			if notOurs[v.Name] == "" {
				t.Errorf("$%s is set by users but has neither a bad value here nor a reason why none is goaccel's to refuse", v.Name)
			}
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			t.Setenv(v.Name, c.value)
			run := c.run
			if run == nil {
				run = newGo
			}
			err := run(t)
			want := "$" + v.Name + "="
			if v.Name == envvar.MPILib.Name || v.Name == envvar.MPIABI.Name {
				want = v.Name + "=" // internal/mpi's words
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s=%s: %v, want an error naming %s", v.Name, c.value, err, want)
			}
		})
	}
}

// tryNew is New(cfg) (quiet) on a bad setting: the Accelerator it makes, if any, is closed.
func tryNew(t *testing.T, cfg Config) error {
	t.Helper()
	cfg.Quiet = true
	a, err := New(cfg)
	if err == nil {
		a.Close()
	}
	return err
}

// regularFile is a file, below which no folder can be made.
func regularFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDeviceCapNamesItsSources: a device count over the cap names the variable it came from
// and what set the cap: $GOACCEL_MAX_CPU_DEVICES when set, else the default's rule.
func TestDeviceCapNamesItsSources(t *testing.T) {
	plugin := cpuPlugin(t)
	for _, c := range []struct {
		name                string
		devices, cap, flags string
		cfg                 int
		want                []string
	}{
		{"variable over the variable's cap", "64", "4", "", 0,
			[]string{`$GOACCEL_DEVICES=64: 64 XLA CPU devices requested, above the limit of 4 set by $GOACCEL_MAX_CPU_DEVICES=4`}},
		{"variable over the default cap", "100000", "", "", 0,
			[]string{`$GOACCEL_DEVICES=100000: 100000 XLA CPU devices requested`, "(max(8, CPU cores) on this machine's"}},
		{"XLA_FLAGS over the cap", "", "2", "--xla_force_host_platform_device_count=3", 0,
			[]string{`$XLA_FLAGS="--xla_force_host_platform_device_count=3": 3 XLA CPU devices`, "set by $GOACCEL_MAX_CPU_DEVICES=2"}},
		{"Config over the cap", "64", "2", "", 3,
			[]string{`Config.Devices=3: 3 XLA CPU devices`, "set by $GOACCEL_MAX_CPU_DEVICES=2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(envvar.Devices.Name, c.devices)
			t.Setenv(envvar.MaxCPUDevices.Name, c.cap)
			t.Setenv(envvar.XLAFlags.Name, c.flags)
			err := tryNew(t, Config{Backend: plugin, Devices: c.cfg})
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%v, want an error containing %q", err, w)
				}
			}
			if err != nil && c.cap != "" && strings.Contains(err.Error(), "max(8, CPU cores)") {
				t.Errorf("%v: the cap was set by $GOACCEL_MAX_CPU_DEVICES, not the default", err)
			}
		})
	}
}

// TestNameFlags: a program whose flag set a Config field gets the flag in New's error; a
// value from the environment keeps naming its variable.
func TestNameFlags(t *testing.T) {
	flags := map[string]string{"MixedPrecision": "--mixed_precision"}
	err := NameFlags(tryNew(t, Config{Backend: "go", MixedPrecision: "fp8"}), flags)
	var se *SettingError
	if err == nil || !strings.HasPrefix(err.Error(), `accelerator: New: --mixed_precision "fp8": unknown precision`) ||
		!errors.As(err, &se) || se.Source != "--mixed_precision" {
		t.Errorf("Config.MixedPrecision fp8 set by --mixed_precision: %v", err)
	}
	t.Setenv(envvar.MixedPrecision.Name, "fp8")
	if err := NameFlags(tryNew(t, Config{Backend: "go"}), flags); err == nil ||
		!strings.Contains(err.Error(), `$GOACCEL_MIXED_PRECISION="fp8"`) {
		t.Errorf("$GOACCEL_MIXED_PRECISION=fp8: %v, want the variable named", err)
	}
}
