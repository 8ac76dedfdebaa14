// Package accelerator runs one training program unchanged on the pure-Go backend, on XLA
// with one or several CPU devices, on one GPU or on all GPUs of a machine — the role of
// Hugging Face Accelerate and PyTorch DistributedDataParallel for Go programs built on GoMLX.
//
// A program creates one Accelerator, prepares its model variables (a model.Store), a GoMLX
// optimizer and a data source, then loops:
//
//	acc, err := accelerator.New(accelerator.Config{Seed: 42}) // finds GPUs, else CPU devices, else pure Go
//	job, err := acc.Prepare(store, optimizer.Adam().LearningRate(2e-5).Done(), loader)
//	train := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *graph.Node {
//	    l := accelerator.CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
//	    acc.Backward(s, l) // gradients, mean over the global batch, optimizer update
//	    return l
//	})
//	eval := job.EvalStep(predict) // per-example outputs, e.g. the logits
//	for epoch := range epochs {
//	    for batch, err := range job.Batches() { // one global batch at a time; the epoch advances by itself
//	        loss, err := train.Run(batch)
//	    }
//	    res, err := job.Evaluate(testLoader, eval) // gathered in example order, padding dropped
//	}
//
// # Words
//
// An example is one item of a dataset; a batch is what the loader yields for one device (the
// per-device batch); a global batch is the batches of all devices (and processes) that are
// run together; a step is one optimizer update (with gradient accumulation over k batches, k
// global batches make one step); an epoch is one pass over the dataset.
//
// # Compiled steps
//
// Job.TrainStep and Job.EvalStep turn a graph-building function into a compiled step, the way
// GoMLX's model.NewExec does: build each once, outside the loop, and Run it on every global
// batch. A handle owns its compiled graphs (one per input shape), so two handles never share
// one, even when a factory made both: a closure's captured values (a loss weight, a
// temperature) are constants of its handle's graph, and a new value needs a new handle.
//
// # Semantics
//
//   - Batch size is per device, as in DDP: global batch = per-device batch x devices x processes.
//     New prints the backend and devices; Prepare prints the batch plan.
//   - Distribution uses GoMLX AutoSharding (XLA Shardy) over a 1-D device mesh named "data":
//     variables are replicated on every device, every input is sharded along its batch axis
//     (device d gets exactly the per-device batch that the loader assigned to replica d), and
//     the step function is written for the whole global batch. The loss is a mean over the
//     global batch, so the gradient is that mean and XLA inserts the all-reduce: an N-device
//     run and a 1-device run at the same global batch compute the same update. The tests check
//     this for 1, 2 and 4 XLA CPU devices over 30 Adam steps to within 2e-5 (absolute, float32;
//     the reduction order differs, so results agree to rounding, not bit for bit), and with SGD,
//     whose step would scale with a sum, to the same tolerance.
//   - Why AutoSharding and not GoMLX's explicit SPMD with a hand-written all-reduce: in GoMLX
//     v0.28.3 / go-xla v0.4.1, SPMD with model variables fails to build ("mesh not found",
//     pinned by TestGoMLXSPMDVariablesBug), and AutoSharding gives the same numbers as one
//     device (the equivalence tests above).
//   - What is equal across device counts, and what is not: without randomness in the step
//     (no dropout), the N-device and 1-device runs compute the same losses and variables to
//     rounding (the tolerance above). With dropout, XLA partitions the random-number generator
//     differently for each device layout, so the dropout masks, and so the runs, differ —
//     as they differ between DDP's ranks. Each run is still a correct sample of the same
//     training; it is not the same sample. Evaluation (training off) is not affected.
//   - Each step's executable is compiled once per input shape; variables stay on the devices
//     and are donated to each step; the host reads the loss only when Loss.Value is called.
//   - Padding rows (sampler wrap-around and short-batch fillers) carry Mask=false: losses built
//     with CrossEntropy or MaskedMean, and Evaluate/GatherForMetrics, count each real example
//     exactly once.
//
// # Backends
//
// New picks, in order: Config.Backend or $GOMLX_BACKEND; XLA's CUDA PJRT plugin when a GPU is
// visible (CUDA_VISIBLE_DEVICES is honoured); XLA's CPU plugin; the pure-Go backend, with a
// notice. Plugins are looked up in $PJRT_PLUGIN_LIBRARY_PATH, go-xla's install folders and
// Python's site-packages (JAX's jax_plugins/xla_cuda*/ and pip CPU plugin packages such as
// lammps-jax-pjrt-cpu); nothing is downloaded unless Config.AllowDownload is set. On the CPU
// plugin, Config.Devices (or $GOACCEL_DEVICES, or --xla_force_host_platform_device_count in
// $XLA_FLAGS) sets how many host devices XLA creates: that is how multi-device code is tested
// without GPUs.
//
// # Processes
//
// The process API (ProcessIndex, NumProcesses, IsMainProcess, WaitForEveryone, Print,
// MainProcessFirst) reads torchrun's RANK, WORLD_SIZE and LOCAL_RANK so programs written now
// keep working when several processes arrive; today one process drives all local devices and
// New refuses WORLD_SIZE > 1 with an error that says so.
package accelerator
