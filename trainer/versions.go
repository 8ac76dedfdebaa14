package trainer

import (
	"runtime"
	"runtime/debug"
)

// modulePath is goaccel's module path.
const modulePath = "github.com/goaccel/goaccel"

// Versions are the versions of goaccel, of the GoMLX modules and of Go in this binary, as
// recorded in config.json and printed by `goaccel env`.
type Versions struct {
	Goaccel string `json:"goaccel"`
	GoMLX   string `json:"gomlx"`
	Compute string `json:"gomlx_compute"`
	GoXLA   string `json:"go_xla"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	CPUs    int    `json:"cpus"`
}

// BuildVersions reads the versions from the binary's build information. A module that is
// not linked in reads "not linked"; goaccel built from its own source tree reads "(devel)",
// followed by the VCS revision when the build recorded one.
func BuildVersions() Versions {
	v := Versions{Goaccel: "unknown", GoMLX: "not linked", Compute: "not linked", GoXLA: "not linked",
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	deps := map[string]string{}
	for _, d := range bi.Deps {
		ver := d.Version
		if d.Replace != nil {
			ver += " => " + d.Replace.Path + " " + d.Replace.Version
		}
		deps[d.Path] = ver
	}
	if bi.Main.Path == modulePath {
		v.Goaccel = bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				v.Goaccel += " " + s.Value
			}
		}
	} else if ver, ok := deps[modulePath]; ok {
		v.Goaccel = ver
	}
	for path, dst := range map[string]*string{"github.com/gomlx/gomlx": &v.GoMLX,
		"github.com/gomlx/compute": &v.Compute, "github.com/gomlx/go-xla": &v.GoXLA} {
		if ver, ok := deps[path]; ok {
			*dst = ver
		}
	}
	return v
}
