package accelerator

import (
	"errors"

	"github.com/goaccel/goaccel/internal/cudalib"
)

// NVIDIALibraries says where NVIDIA's CUDA libraries for a CUDA plugin were found (the
// nvidia/ folder of a pip install, and the CUDA data dir with libdevice and ptxas), and why.
type NVIDIALibraries = cudalib.Libraries

// FindNVIDIALibraries says which NVIDIA libraries New would use for the CUDA plugin p and
// why: an nvidia/ folder beside the plugin's folder (go-xla's place), else site-packages/nvidia
// of the plugin's own pip install, else that of any of Python's site-packages. New points XLA
// there before loading p: --xla_gpu_cuda_data_dir in XLA_FLAGS (unless XLA_FLAGS sets it) and
// the shared libraries loaded by path. It reads the file system only.
func FindNVIDIALibraries(p Plugin) NVIDIALibraries { return cudalib.Find(p.Path, sitePackages()) }

// useNVIDIALibraries points XLA at p's NVIDIA libraries; the error joins the libraries that did
// not load, for the message of a plugin that then fails.
func (a *Accelerator) useNVIDIALibraries(p Plugin) error {
	a.info.NVIDIA = FindNVIDIALibraries(p)
	return errors.Join(cudalib.Apply(a.info.NVIDIA)...)
}
