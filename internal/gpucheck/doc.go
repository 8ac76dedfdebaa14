// Package gpucheck holds the test of scripts/gpu_check.sh, the GPU run that `make gpu-bundle`
// prepares: it builds the bundle and runs the script's --dry-run on XLA's CPU plugin, so that
// every part of the script has run before it meets a GPU (docs/gpu.md). It has no code.
package gpucheck
