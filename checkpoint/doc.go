// Package checkpoint saves and restores the full state of a training run, safely, and moves
// model weights in and out of the safetensors format.
//
// A checkpoint is a directory (see Manager for the layout): the Store's trainable variables in
// weights.safetensors, its other variables (optimizer moments, global step, learning rate,
// random state) in optimizer.safetensors, the run's position (epoch, step, loader position,
// seed) in progress.json, the caller's config and metrics history in config.json and
// metrics.json, in a multi-process run the random state of every process in
// random_state.safetensors, and MANIFEST.json with the size and SHA-256 of each of those files.
//
// Typical use, with the same code on every process of a run (Example is the complete
// program):
//
//	mgr, err := checkpoint.NewManager(outDir, checkpoint.Options{KeepLast: 3, Processes: acc})
//	st := &checkpoint.State{Store: job.Store(), Config: &cfg}
//	if path, err := mgr.LoadLatest(st); err == nil {
//		// The Store now holds the model and optimizer state; the loader's position must be
//		// restored too, or the resumed run starts the data order again. It continues on any
//		// number of devices and processes (see data.Loader.Restore).
//		if err := loader.Restore(st.Progress.Loader); err != nil {
//			return err
//		}
//		acc.Print("resumed from", path, "at step", st.Progress.Step)
//	} else if !errors.Is(err, checkpoint.ErrNoCheckpoint) {
//		return err
//	}
//	st.Progress.RecordTopology(acc.NumDevices(), acc.NumProcesses()) // the list of topologies
//	...
//	step, err := job.GlobalStep()
//	pos := loader.State() // after the global batch of this step was handed out
//	st.Progress.Epoch, st.Progress.Step, st.Progress.Loader, st.Progress.Seed = pos.Epoch, step, pos, seed
//	_, err = mgr.Save(st) // the main process writes, the others wait
//
// Guarantees: a save is atomic (a crash, kill -9 included, never leaves a partial checkpoint
// where Load or LoadLatest would take it); loading verifies every byte against the manifest and
// changes nothing when the checkpoint is damaged or does not match the Store; LoadLatest falls
// back to the newest intact checkpoint and says so; a checkpoint saved on any number of devices
// loads on any number. fsync makes saves durable across power loss as far as the file system
// honours it.
//
// Random state: each process has its own device random state, which dropout draws from (the
// Store variable "/#rngState"; the Accelerator seeds it with Seed + rank in Prepare, so load
// after Prepare). With Options.Processes implementing Ranks, as the Accelerator does, Save
// gathers every process's state into random_state.safetensors (tensor "rank<r>") and Load
// gives rank r entry r: a resumed N-process run draws the masks of the uninterrupted one, bit
// for bit. A rank that the checkpoint holds no state for keeps the one its Store has (after
// Prepare: Seed + rank, what that rank starts a fresh run with). That is a rank that did not
// exist at save time, and every rank but 0 with a checkpoint saved by one process, or saved
// before random_state.safetensors existed: those hold only the main process's state (as
// "/#rngState" in optimizer.safetensors), which rank 0 loads. So a run resumed on more
// processes than it was saved with draws, on the new ranks, other dropout masks than any
// uninterrupted run: tests that compare runs across topologies exactly keep dropout off.
//
// Asynchronous saves: SaveAsync returns once it has copied the state to host memory (a copy
// it keeps and reuses), and writes it in the background with the same guarantees, like
// PyTorch DCP's async_save; the next steps run meanwhile. One save is in flight at a time, its
// error comes back from the next SaveAsync, Save or Wait, and Wait must be called before the
// program exits. A SIGKILL during it leaves the previous checkpoint as the latest.
//
// Speed: the tensor files are written with O_DIRECT where the file system allows it, from
// reused aligned buffers, with the copy, the SHA-256 and the write of each file overlapped and
// the files written concurrently (see docs/performance.md for figures).
//
// The package does not decide when to save: the caller (the trainer) does.
//
// Weights for inference: ExportWeights writes chosen variables to a standalone safetensors
// file, and ImportWeights reads one (for example a Hugging Face model) into a Store. The
// safetensors reader and writer are in the subpackage checkpoint/safetensors.
package checkpoint
