package accelerator

import (
	"errors"

	"github.com/goaccel/goaccel/internal/cudalib"
	"github.com/goaccel/goaccel/internal/plugins"
)

// NVIDIALibraries says where NVIDIA's CUDA libraries for a CUDA plugin were found (the
// nvidia/ folder of a pip install, and the CUDA data dir with libdevice and ptxas), and why.
// Kept exported as the type of Info.NVIDIA, which programs read to report what a CUDA run
// loaded; finding them without an Accelerator is internal (`goaccel env` does it).
type NVIDIALibraries = cudalib.Libraries

// useNVIDIALibraries points XLA at p's NVIDIA libraries; the error joins the libraries that did
// not load, for the message of a plugin that then fails.
func (a *Accelerator) useNVIDIALibraries(p Plugin) error {
	a.info.NVIDIA = plugins.NVIDIALibraries(p)
	return errors.Join(cudalib.Apply(a.info.NVIDIA)...)
}
