// Package accelerator runs one training program unchanged on the pure-Go backend, on XLA
// with one or several CPU devices, on one GPU or on all GPUs of a machine — the role of
// Hugging Face Accelerate and PyTorch DistributedDataParallel for Go programs built on GoMLX.
//
// A program creates one Accelerator, prepares its model variables (a model.Store of GoMLX's
// github.com/gomlx/gomlx/ml/model), a GoMLX optimizer (github.com/gomlx/gomlx/ml/train/optimizer)
// and a data source, then loops (graph is github.com/gomlx/gomlx/core/graph):
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
// run together; a step is one optimizer update; an epoch is one pass over the dataset.
//
// A train step runs one global batch, and the update happens every k of them: TrainStep.Run,
// StepFn and EvalStep each handle one global batch; with WithGradientAccumulation(k), k-1 Runs
// only accumulate gradients and every k-th Run applies the update (the step); without
// accumulation every Run is a step. StepStats counts both (Batches, Updates).
//
// A shard is the piece of something split over devices or ranks that one of them holds: a
// device's part of the global batch (data.GlobalBatch.Shards), or a piece of a variable or of
// the optimizer state under Config.Sharding (over one process's devices, or one rank's slice
// over several processes). A plan is a line printed before running that says what will run:
// the run's (Plan, printed by New), the batch plan (Prepare) and the memory plan (MemoryPlan,
// on a TrainStep's first Run).
//
// A rank is a process's index in the run; its local rank is its index on its machine
// (torchrun's LOCAL_RANK, and nothing else); a device is one accelerator (or one XLA CPU
// device); a replica is one device's share of the work, devices x processes of them in all
// (replica r = rank x devices + device). Epochs, batches and steps that a person reads count
// from 1; ranks, devices and replicas from 0.
//
// # Strategies
//
// How a step runs is chosen once, in Prepare, from the process group and the settings, among
// three strategies: in one process, the step is one compiled graph and XLA inserts the
// all-reduce of the gradients (under Sharding, the same graph with the optimizer state, the
// gradient accumulators or the weights split over the devices); over several processes, a
// gradients graph, a reduction on the host (MPI: exact, or 16-bit under GradientCompression)
// and an apply graph; over several processes under Sharding, zero1: a reduce-scatter of the
// gradients, the optimizer on this rank's slices of the variables, and an all-gather of the new
// weights. All compute the same update. Settings that cannot run together are refused with an
// error naming both, from one table (settings.go); docs/architecture.md shows where other
// strategies go.
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
//     run and a 1-device run at the same global batch compute the same update, to float32
//     rounding (the reduction order differs, so not bit for bit); docs/semantics.md states the
//     tolerance the tests hold and why, with Adam and with SGD, whose step would scale with a sum.
//   - Why AutoSharding and not GoMLX's explicit SPMD with a hand-written all-reduce: in GoMLX
//     v0.28.3 / go-xla v0.4.1, SPMD with model variables fails to build ("mesh not found",
//     pinned by TestGoMLXSPMDVariablesBug), and AutoSharding gives the same numbers as one
//     device (the equivalence tests above).
//   - What is equal across device counts, and what is not: without randomness in the step
//     (no dropout), the N-device and 1-device runs compute the same losses and variables to
//     rounding (the tolerance above). With dropout they differ. The random state is one
//     variable per process; each step draws the random numbers of its whole global batch from
//     it (the same numbers on any device count) and each device uses its own rows, so the
//     replicas' masks differ; but the sampler interleaves the replicas, so a row holds another
//     example on another device count, and the examples get other masks (pinned by
//     TestDropoutMasksAcrossDevices). Each run is still a correct sample of the same
//     training; it is not the same sample. Evaluation (training off) is not affected.
//   - Each step's executable is compiled once per input shape; variables stay on the devices
//     and are donated to each step; the host reads the loss only when Loss.Value is called.
//   - Padding rows (sampler wrap-around and short-batch fillers) carry Mask=false: losses built
//     with CrossEntropy or MaskedMean, and Evaluate/GatherForMetrics, count each real example
//     exactly once.
//   - Gradient accumulation over k batches (WithGradientAccumulation) is exact: each batch's
//     gradient is weighted by its number of real examples, and the update divides the sum
//     over the k batches once, by their total: the mean over the real examples of all k, the
//     update of one step on them concatenated (an epoch's padded tail weighs its real
//     examples only, not a full batch's worth), in one process and across processes. A loss
//     that is a mean over other units (tokens) gives its weight with BackwardWeighted.
//     Clipping applies to that mean. The tests check an epoch tail (3 real examples of 8)
//     against one step on the 11 examples, and one program (global batch 16, accumulation 2,
//     clipping, Adam, 203 examples) over 30 updates on 1x1, 1x2, 1x4, 2x1 and 2x2 (processes
//     x devices) to the tolerance above.
//   - Before a step first runs (and before a batch of new shapes runs), TrainStep.Run compiles
//     it and makes its MemoryPlan per device (weights, gradients, optimizer state, XLA's
//     temporaries), printed on the main process; over Config.DeviceMemory it is an error
//     before anything executes, and WithAutoBatch instead runs each global batch as
//     micro-batches that fit, accumulated into the same update (docs/memory.md).
//   - Config.Verify (or $GOACCEL_VERIFY=N) checks the distributed update against one device
//     at the first and every N-th update: rank 0 keeps a copy of the variables and the
//     optimizer state, gathers the update's global batches, recomputes the update on its
//     device 0 and fails the run, on every process, naming the step, the first variable that
//     differs beyond 1e-5 + 1e-3 x its largest value, and the difference. It costs twice the
//     model's memory on rank 0 on the checked updates and nothing when off; it needs a step
//     without randomness (no dropout) and does not apply to a model that does not fit one
//     device (a sharded run, when there is one, cannot be recomputed on one device).
//
// # Backends
//
// New picks, in order: Config.Backend or $GOMLX_BACKEND; XLA's CUDA PJRT plugin when a GPU is
// visible (CUDA_VISIBLE_DEVICES is honoured); XLA's CPU plugin; the pure-Go backend, with a
// notice. Plugins are looked up in $PJRT_PLUGIN_LIBRARY_PATH, go-xla's install folders and
// Python's site-packages (JAX's jax_plugins/xla_cuda*/ and pip CPU plugin packages such as
// lammps-jax-pjrt-cpu); nothing is downloaded unless Config.AllowDownload is set. On the CPU
// plugin, Config.Devices (or $GOACCEL_DEVICES, or --xla_force_host_platform_device_count in
// $XLA_FLAGS) sets how many host devices XLA creates, 1 when none of them does: more host
// devices are how multi-device code is tested without GPUs, not a speed-up. New creates at most max(8, CPU cores) of them and refuses more: each host device
// holds a full model replica and its own thread pool, so devices beyond the cores only cost
// memory. $GOACCEL_MAX_CPU_DEVICES (a positive integer) sets another cap.
//
// # Host memory
//
// XLA's CPU runtime allocates each step's temporaries afresh, and with glibc's default malloc
// every step faults that memory in again. Importing this package changes nothing in how the
// process allocates; a program opts in with a blank import of package hostmalloc, which links
// in a malloc of its own for requests of 256 KiB or more (the block cache, internal/blockcache)
// that keeps freed blocks for the next step, at about glibc's defaults' peak memory
// ($GOACCEL_HOST_MALLOC=system turns it off, keep picks glibc's own settings instead by
// re-executing the program at start). On the CPU plugin without that import, the plan line
// New prints says what it would gain. Nothing runs at import: the package has no init
// function.
//
// # Processes
//
// The same program also runs as several processes, on one machine or several, started by a
// launcher: `goaccel launch --nproc_per_node 2 ./train` (torchrun's flags and meanings), a
// cluster's `mpirun`/`mpiexec`, or Slurm's `srun`. New reads the process's place from the
// launcher's environment — torchrun's RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE (what goaccel
// launch sets), Open MPI's OMPI_COMM_WORLD_*, MPICH/Hydra's PMI_RANK/PMI_SIZE/MPI_LOCALRANKID,
// Slurm's SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID in a task of srun (SLURM_STEP_ID set: a batch
// script or an salloc shell is one process) — and with more than one process joins the
// others through MPI, loaded at run time (package internal/mpi): a program that runs as one
// process, go build and go test never need MPI. Without a launcher's PMI (torch's variables
// alone, as Kubeflow's PyTorchJob sets them; plain srun on a cluster whose MpiDefault is none)
// the processes first meet as init_process_group("env://") does: rank 0 serves the others at
// MASTER_ADDR:MASTER_PORT (under Slurm: the first host of SLURM_STEP_NODELIST and a port
// derived from SLURM_JOB_ID, unless MASTER_ADDR/MASTER_PORT are set), behind
// $GOACCEL_JOB_SECRET when set; a process that never comes is named after the timeout below,
// and one that dies stops the others.
//
//   - Process model: each process drives its local devices with XLA sharding, exactly as a
//     single process does (one process per machine driving all its GPUs, or one per GPU when
//     the launcher splits them: goaccel launch gives each local process its share of
//     CUDA_VISIBLE_DEVICES, or of the XLA CPU devices through GOACCEL_DEVICES). Replicas =
//     devices x processes; the loader gives replica r = rank x devices + d its share.
//   - The update: a training step computes each process's loss and mean gradient on its
//     devices, then all-reduces them on the host in fused buckets (DDP's 25 MiB buckets,
//     Horovod's tensor fusion), each process weighted by its number of real examples (or by
//     BackwardWeighted's weight), so the
//     gradient is the mean over the real examples of the whole global batch whatever the split
//     into processes and devices; the same optimizer update (with accumulation, clipping and
//     schedule) then runs on every process. The tests check 2 processes x 2 devices and 4 x 1
//     against 1 x 1 with Adam and with SGD, to the tolerance above, and that all
//     processes end with identical variables. With gradient accumulation over k batches the
//     weighted gradients stay on the devices (as with DDP's no_sync) and cross processes once,
//     on the k-th batch; the batches before it all-reduce only their loss and weight (16
//     bytes). StepStats.SyncBytes is the bytes of one update.
//   - Variables: at Prepare and at the first step, every process's variables are compared with
//     rank 0's (names, shapes, checksums): a different model is an error naming the first
//     differing variable, returned on every process; different values are replaced by rank 0's
//     (DDP's broadcast of the parameters). Non-trainable variables are broadcast too but are not
//     all-reduced afterwards: statistics updated by the step (batch-norm moving averages) are
//     each process's own, as in DDP without SyncBatchNorm. The random state (dropout) is seeded
//     with Seed + rank in Prepare, so the ranks draw different masks. A checkpoint saved with
//     the Accelerator as its checkpoint.Options.Processes holds every rank's state and gives
//     each rank its own back (AllGather carries them; a rank the checkpoint has none for keeps
//     Seed + rank): a resumed run draws the masks of the uninterrupted one. Load a checkpoint
//     after Prepare, which seeds the state afresh.
//   - Evaluation: EvalStep.Run and Evaluate gather from every device of every process, so each
//     real example counts exactly once and every process gets the same results. Outputs whose
//     shape beyond the batch axis differs between batches or processes (per-token logits of
//     batches padded to different lengths) are padded with EvalStep.Pad to the largest shape
//     over all of them, the same on every process, and Gathered.Lengths gives each row's real
//     shape; a dtype or rank that differs is an error naming the output and both shapes.
//   - Reduce, WaitForEveryone and MainProcessFirst work across processes; Print and Printf
//     print on rank 0 only. Every wait on other processes (a gradient all-reduce, a gather, a
//     barrier) is bounded by Config.Timeout, else $GOACCEL_TIMEOUT (a Go duration such as
//     "90s" or "30m", or a number of seconds), else 30 minutes: a process that never arrives
//     makes the others fail with an error naming it, never a silent hang. The variable's former
//     name, $GOACCEL_COLLECTIVE_TIMEOUT, is an error that names it.
//   - Ending: call Close, or end with Exit(code), which finalizes MPI and exits the way MPI
//     launchers expect (MPICH's mpiexec takes a plain os.Exit for a crash).
//   - A wait that ran out of time returns an error wrapping ErrTimeout: test for it with
//     errors.Is(err, accelerator.ErrTimeout).
package accelerator
