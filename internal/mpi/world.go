package mpi

// World returns the Comm that Init returned in this process, or nil before Init: for code that
// needs the communicator of a job another package joined (accelerator.New calls Init), such as
// goaccel launch --selftest's all-reduce.
func World() *Comm { return initialized() }
