package envvar

// The table. Its order is the order of `goaccel env` and docs/environment.md. A new variable,
// a new launcher's variables included (PBS, LSF), gets its entry here and nowhere else.

// Process placement as torchrun writes it; goaccel launch writes the same, and the accelerator
// reads them first.
var (
	// Rank is RANK.
	Rank = integer("RANK", "this process's rank among all the job's processes, 0 to WORLD_SIZE-1", Torchrun, Launch)
	// LocalRank is LOCAL_RANK.
	LocalRank = integer("LOCAL_RANK", "this process's index among the processes on its machine, 0 to LOCAL_WORLD_SIZE-1", Torchrun, Launch)
	// WorldSize is WORLD_SIZE.
	WorldSize = integer("WORLD_SIZE", "the number of processes in the job, on every machine", Torchrun, Launch)
	// LocalWorldSize is LOCAL_WORLD_SIZE.
	LocalWorldSize = integer("LOCAL_WORLD_SIZE", "the number of processes on this machine (--nproc_per_node)", Torchrun, Launch)
	// GroupRank is GROUP_RANK.
	GroupRank = integer("GROUP_RANK", "this machine's index among the job's machines (torchrun: its worker group's rank), 0 to GROUP_WORLD_SIZE-1", Torchrun, Launch)
	// NodeRank is NODE_RANK.
	NodeRank = integer("NODE_RANK", "the same as GROUP_RANK, under the name PyTorch Lightning reads", Launch)
	// GroupWorldSize is GROUP_WORLD_SIZE.
	GroupWorldSize = integer("GROUP_WORLD_SIZE", "the number of machines (torchrun: worker groups) in the job (--nnodes)", Torchrun, Launch)
	// MasterAddr is MASTER_ADDR.
	MasterAddr = str("MASTER_ADDR", "the host name or address of the machine that runs rank 0", Torchrun, Launch)
	// MasterPort is MASTER_PORT.
	MasterPort = integer("MASTER_PORT", "the port on MASTER_ADDR for rank 0's TCP store (PyTorch's c10d); goaccel launch's own port (--master_port) is for its launchers only", Torchrun, Launch)
	// TorchelasticRestartCount is TORCHELASTIC_RESTART_COUNT.
	TorchelasticRestartCount = integer("TORCHELASTIC_RESTART_COUNT", "how many times the job's processes were restarted so far (0 on the first attempt)", Torchrun, Launch)
	// TorchelasticRunID is TORCHELASTIC_RUN_ID.
	TorchelasticRunID = str("TORCHELASTIC_RUN_ID", "torchrun's job id (--rdzv_id), in the processes it starts; read to explain a MASTER_PORT that torchrun's own store holds", Torchrun)
	// RestartCount is GOACCEL_RESTART_COUNT.
	RestartCount = integer("GOACCEL_RESTART_COUNT", "the same as TORCHELASTIC_RESTART_COUNT, under goaccel's name", Launch)
)

// torchrun's launcher flags as its elastic agent reads them (PET_<FLAG>), which Kubeflow's
// PyTorchJob and TrainJob set in every pod: goaccel launch takes them as its flags' defaults.
var (
	// PETNNodes is PET_NNODES.
	PETNNodes = str("PET_NNODES", "--nnodes for goaccel launch when not given: N, or MIN:MAX for an elastic job", Kubeflow, User)
	// PETNprocPerNode is PET_NPROC_PER_NODE.
	PETNprocPerNode = str("PET_NPROC_PER_NODE", "--nproc_per_node for goaccel launch when not given (a number, gpu, cpu or auto, as torchrun reads them)", Kubeflow, User)
	// PETNodeRank is PET_NODE_RANK.
	PETNodeRank = integer("PET_NODE_RANK", "--node_rank for goaccel launch when not given", Kubeflow, User)
	// PETMasterAddr is PET_MASTER_ADDR.
	PETMasterAddr = str("PET_MASTER_ADDR", "--master_addr for goaccel launch when not given", Kubeflow, User)
	// PETMasterPort is PET_MASTER_PORT.
	PETMasterPort = integer("PET_MASTER_PORT", "--master_port for goaccel launch when not given", Kubeflow, User)
	// PETRdzvBackend is PET_RDZV_BACKEND.
	PETRdzvBackend = str("PET_RDZV_BACKEND", "--rdzv_backend for goaccel launch when not given (c10d or static)", Kubeflow, User)
	// PETRdzvEndpoint is PET_RDZV_ENDPOINT.
	PETRdzvEndpoint = str("PET_RDZV_ENDPOINT", "--rdzv_endpoint for goaccel launch when not given (HOST[:PORT])", Kubeflow, User)
	// PETRdzvID is PET_RDZV_ID.
	PETRdzvID = str("PET_RDZV_ID", "--rdzv_id for goaccel launch when not given", Kubeflow, User)
	// PETRdzvConf is PET_RDZV_CONF.
	PETRdzvConf = str("PET_RDZV_CONF", "--rdzv_conf for goaccel launch when not given (join_timeout=S,last_call_timeout=S,close_timeout=S)", Kubeflow, User)
	// PETMaxRestarts is PET_MAX_RESTARTS.
	PETMaxRestarts = integer("PET_MAX_RESTARTS", "--max_restarts for goaccel launch when not given", Kubeflow, User)
	// PETStandalone is PET_STANDALONE.
	PETStandalone = str("PET_STANDALONE", "--standalone for goaccel launch when not given (1, or empty as Kubeflow's PyTorchJob sets it: on; 0: off)", Kubeflow, User)
)

// MPICH's process-manager interface (PMI-1), which Hydra's mpiexec and goaccel launch serve.
var (
	// PMIPort is PMI_PORT.
	PMIPort = str("PMI_PORT", "host:port of the PMI server that MPICH's MPI_Init connects to; goaccel launch gives PMI_FD instead and removes it from its ranks", Hydra)
	// PMIID is PMI_ID.
	PMIID = integer("PMI_ID", "this process's id for the PMI server at PMI_PORT (its rank); goaccel launch removes it from its ranks", Hydra)
	// PMIRank is PMI_RANK.
	PMIRank = integer("PMI_RANK", "this process's rank in the MPI job", Hydra, Launch)
	// PMISize is PMI_SIZE.
	PMISize = integer("PMI_SIZE", "the number of processes in the MPI job", Hydra, Launch)
	// MPILocalRankID is MPI_LOCALRANKID.
	MPILocalRankID = integer("MPI_LOCALRANKID", "this process's index among the MPI job's processes on its machine", Hydra, Launch)
	// MPILocalNRanks is MPI_LOCALNRANKS.
	MPILocalNRanks = integer("MPI_LOCALNRANKS", "the number of the MPI job's processes on this machine", Hydra, Launch)
	// PMIVersion is MPIR_CVAR_PMI_VERSION.
	PMIVersion = integer("MPIR_CVAR_PMI_VERSION", "the PMI version MPICH speaks to its server (goaccel launch serves 1 only)", Launch)
	// PMIFD is PMI_FD.
	PMIFD = integer("PMI_FD", "the PMI-1 socket a rank inherits from its launcher (MPICH's Hydra, goaccel launch: each rank talks to its own launcher, which relays to the master)", Hydra, Launch)
	// PMISpawned is PMI_SPAWNED.
	PMISpawned = integer("PMI_SPAWNED", "set by MPICH's launcher for spawned processes; goaccel launch removes it from its ranks", Hydra)
	// PMIJobID is PMI_JOBID.
	PMIJobID = str("PMI_JOBID", "an enclosing PMI launcher's job id; goaccel launch removes it from its ranks", Hydra, Srun)
	// BcastAlgorithm is MPIR_CVAR_BCAST_POSIX_INTRA_ALGORITHM.
	BcastAlgorithm = str("MPIR_CVAR_BCAST_POSIX_INTRA_ALGORITHM", "MPICH's shared-memory broadcast algorithm; goaccel sets \"mpir\" unless set (posix spins with more ranks than cores)", User, Launch, Goaccel)
	// AllreduceAlgorithm is MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM.
	AllreduceAlgorithm = str("MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM", "MPICH's shared-memory all-reduce algorithm; goaccel sets \"mpir\" unless set", User, Launch, Goaccel)
	// BarrierAlgorithm is MPIR_CVAR_BARRIER_POSIX_INTRA_ALGORITHM.
	BarrierAlgorithm = str("MPIR_CVAR_BARRIER_POSIX_INTRA_ALGORITHM", "MPICH's shared-memory barrier algorithm; goaccel sets \"mpir\" unless set", User, Launch, Goaccel)
)

// Open MPI's mpirun (and its PMIx), then Slurm's srun.
var (
	// OMPIRank is OMPI_COMM_WORLD_RANK.
	OMPIRank = integer("OMPI_COMM_WORLD_RANK", "this process's rank in Open MPI's job", OpenMPI)
	// OMPISize is OMPI_COMM_WORLD_SIZE.
	OMPISize = integer("OMPI_COMM_WORLD_SIZE", "the number of processes in Open MPI's job (set: only Open MPI's library is looked for)", OpenMPI)
	// OMPILocalRank is OMPI_COMM_WORLD_LOCAL_RANK.
	OMPILocalRank = integer("OMPI_COMM_WORLD_LOCAL_RANK", "this process's index among Open MPI's processes on its machine", OpenMPI)
	// OMPILocalSize is OMPI_COMM_WORLD_LOCAL_SIZE.
	OMPILocalSize = integer("OMPI_COMM_WORLD_LOCAL_SIZE", "the number of Open MPI's processes on this machine", OpenMPI)
	// PMIxRank is PMIX_RANK.
	PMIxRank = integer("PMIX_RANK", "this process's rank for a PMIx server; goaccel launch removes it from its ranks", OpenMPI, Srun)
	// PMIxSize is PMIX_SIZE.
	PMIxSize = integer("PMIX_SIZE", "the number of processes of a PMIx job", OpenMPI, Srun)
	// PMIxNamespace is PMIX_NAMESPACE.
	PMIxNamespace = str("PMIX_NAMESPACE", "a PMIx job's namespace; goaccel launch removes it from its ranks", OpenMPI, Srun)
	// PMIxServerURI2 is PMIX_SERVER_URI2.
	PMIxServerURI2 = str("PMIX_SERVER_URI2", "the address of a PMIx server; goaccel launch removes it from its ranks", OpenMPI, Srun)
	// SlurmProcID is SLURM_PROCID.
	SlurmProcID = integer("SLURM_PROCID", "this task's rank among the Slurm job step's tasks", Srun)
	// SlurmNTasks is SLURM_NTASKS.
	SlurmNTasks = integer("SLURM_NTASKS", "the number of tasks in the Slurm job step", Srun)
	// SlurmLocalID is SLURM_LOCALID.
	SlurmLocalID = integer("SLURM_LOCALID", "this task's index among the job step's tasks on its node", Srun)
	// SlurmNTasksPerNode is SLURM_NTASKS_PER_NODE.
	SlurmNTasksPerNode = slurmCount("SLURM_NTASKS_PER_NODE", "the number of tasks per node, \"2\" or \"2(x3)\" (2 on each of 3 nodes)", Srun)
	// SlurmStepID is SLURM_STEP_ID.
	SlurmStepID = integer("SLURM_STEP_ID", "the job step's id, in every task srun starts; a batch script and an salloc shell have none, so they are not taken for a rank", Srun)
	// SlurmConf is SLURM_CONF.
	SlurmConf = str("SLURM_CONF", "the slurm.conf that Slurm's commands read; the tests' Slurm cluster (scripts/slurm_cluster.sh) sets it for its srun and sbatch", User, Goaccel)
	// SlurmRestartCount is SLURM_RESTART_COUNT.
	SlurmRestartCount = integer("SLURM_RESTART_COUNT", "how many times Slurm requeued the job (a preempted sbatch --requeue job starts its script again); unset before the first requeue", Srun)
	// SlurmStepNumNodes is SLURM_STEP_NUM_NODES.
	SlurmStepNumNodes = integer("SLURM_STEP_NUM_NODES", "the number of nodes of the job step; goaccel launch run once per node (srun --ntasks-per-node=1) takes it as --nnodes when not given", Srun)
	// SlurmdNodeName is SLURMD_NODENAME.
	SlurmdNodeName = str("SLURMD_NODENAME", "the name of the node a task runs on; goaccel launch's --node_rank under Slurm is its place in SLURM_STEP_NODELIST", Srun)
	// SlurmNodeID is SLURM_NODEID.
	SlurmNodeID = integer("SLURM_NODEID", "this task's node among the job's nodes, 0 to SLURM_NNODES-1", Srun)
	// SlurmJobID is SLURM_JOB_ID.
	SlurmJobID = integer("SLURM_JOB_ID", "the Slurm job's id; a task started without a PMI (srun --mpi=none) meets the others on a port derived from it and SLURM_STEP_ID unless MASTER_PORT is set", Srun)
	// SlurmStepNodeList is SLURM_STEP_NODELIST.
	SlurmStepNodeList = str("SLURM_STEP_NODELIST", "the job step's nodes in Slurm's host-list syntax (gpu[01-04,07]); without a PMI, task 0 is on the first and serves the others (unless MASTER_ADDR is set)", Srun)
	// SlurmJobNodeList is SLURM_JOB_NODELIST.
	SlurmJobNodeList = str("SLURM_JOB_NODELIST", "the job's nodes in Slurm's host-list syntax; read when SLURM_STEP_NODELIST is not set", Srun)
)

// The MPI library.
var (
	// MPILib is GOACCEL_MPI_LIB.
	MPILib = str("GOACCEL_MPI_LIB", "the MPI library to load (a libmpi file or a folder holding one); goaccel launch passes the one it found to its ranks", User, Launch)
	// MPIABI is GOACCEL_MPI_ABI.
	MPIABI = str("GOACCEL_MPI_ABI", "the ABI of the MPI library, overriding detection: standard, mpich or openmpi", User)
	// MPI4PyLibMPI is MPI4PY_LIBMPI.
	MPI4PyLibMPI = str("MPI4PY_LIBMPI", "the libmpi that mpi4py 4 loads; goaccel launch sets it to its MPICH unless set", User, Launch)
	// LDLibraryPath is LD_LIBRARY_PATH.
	LDLibraryPath = paths("LD_LIBRARY_PATH", "folders the dynamic linker searches; MPI discovery looks there; goaccel launch puts its MPI's folder first", User, Launch)
	// Path is PATH.
	Path = paths("PATH", "folders searched for programs; under Open MPI, the lib folder beside its mpirun is searched for libmpi", User, OS)
	// Timeout is GOACCEL_TIMEOUT.
	Timeout = duration("GOACCEL_TIMEOUT", "how long any wait on other processes may last before it fails naming the missing ranks (default 30m)", User)
	// Verify is GOACCEL_VERIFY.
	Verify = integer("GOACCEL_VERIFY", "N > 0: at the first and every N-th optimizer update, rank 0 recomputes the update on one device from the gathered global batch and fails the run naming the variable that differs (Config.Verify wins; 0 or unset: off)", User)
	// MixedPrecision is GOACCEL_MIXED_PRECISION.
	MixedPrecision = str("GOACCEL_MIXED_PRECISION", "no, bf16 or fp16: the precision accelerator.New uses when Config.MixedPrecision is empty (bf16/fp16: activations in 16 bits, float32 variables and update; fp16 with dynamic loss scaling)", User)
	// Sharding is GOACCEL_SHARDING.
	Sharding = str("GOACCEL_SHARDING", "no (default), zero1 (optimizer state sharded), zero2 (and gradient accumulators) or zero3 (and weights), over the process's devices; over several processes every stage shards the optimizer state over the processes (Config.Sharding wins)", User)
	// GradientCompression is GOACCEL_GRADIENT_COMPRESSION.
	GradientCompression = str("GOACCEL_GRADIENT_COMPRESSION", "\"bf16\" or \"fp16\": in a run over several processes the gradients cross processes as 16-bit floats (half the bytes) and are summed in float32 (Config.GradientCompression wins; \"no\" or unset: exact float32)", User)
	// Debug is GOACCEL_DEBUG.
	Debug = boolean("GOACCEL_DEBUG", "true or 1: before each collective the processes exchange (sequence, operation, bytes, caller) and fail at once on a mismatch naming every call site (one small all-gather more per collective)", User)
	// HangDir is GOACCEL_HANG_DIR.
	HangDir = str("GOACCEL_HANG_DIR", "the folder a process writes its hang report (last 64 collectives, goroutine stacks) to when a collective times out, outside goaccel launch (default: the working folder)", User)
	// Timeline is GOACCEL_TIMELINE.
	Timeline = str("GOACCEL_TIMELINE", "a folder: each process writes its Chrome trace (chrome://tracing, Perfetto) of steps, graph executions, collectives and loader waits to rank_R.json there when it closes, and goaccel launch merges its node's ranks into timeline-node<N>.json (Config.Timeline wins)", User)
	// StragglerEvery is GOACCEL_STRAGGLER_EVERY.
	StragglerEvery = integer("GOACCEL_STRAGGLER_EVERY", "how often (in optimizer updates; default 100, 0: never) the ranks compare their busy time (step time less the time blocked in collectives, plus the time waiting for data) in one small all-gather; the main process names a rank busier than 1.2x the median of the others", User)
	// DeviceMemory is GOACCEL_DEVICE_MEMORY.
	DeviceMemory = str("GOACCEL_DEVICE_MEMORY", "the memory budget of each device, such as 2GiB, 512MiB or plain bytes: a training step whose memory plan does not fit fails before it runs (Config.DeviceMemory wins; unset: no budget)", User)
	// LogDir is GOACCEL_LOG_DIR.
	LogDir = str("GOACCEL_LOG_DIR", "the folder of this rank's stdout.log and stderr.log; its hang report goes there as hang.txt", Launch)
	// CollectiveTimeout is GOACCEL_COLLECTIVE_TIMEOUT.
	CollectiveTimeout = duration("GOACCEL_COLLECTIVE_TIMEOUT", "GOACCEL_TIMEOUT's former name: setting it is an error that names the new one", User)
)

// Backends, plugins and devices.
var (
	// Backend is GOMLX_BACKEND.
	Backend = str("GOMLX_BACKEND", "the backend accelerator.New opens when Config.Backend is empty: go, xla, xla:cpu, xla:cuda or a plugin's .so", User)
	// PluginPath is PJRT_PLUGIN_LIBRARY_PATH.
	PluginPath = paths("PJRT_PLUGIN_LIBRARY_PATH", "PJRT plugin files or folders holding them, searched before goaccel's home folder", User)
	// XLAFlags is XLA_FLAGS.
	XLAFlags = str("XLA_FLAGS", "XLA's own flags; --xla_force_host_platform_device_count=N sets the CPU devices when GOACCEL_DEVICES is unset", User)
	// Devices is GOACCEL_DEVICES.
	Devices = integer("GOACCEL_DEVICES", "the number of XLA CPU devices of a process (Config.Devices wins); goaccel launch gives each rank its share", User, Launch)
	// MaxCPUDevices is GOACCEL_MAX_CPU_DEVICES.
	MaxCPUDevices = integer("GOACCEL_MAX_CPU_DEVICES", "the most XLA CPU devices a process may ask for (default max(8, CPU cores))", User)
	// TF32 is GOACCEL_TF32.
	TF32 = str("GOACCEL_TF32", "on or off (also 1/0, true/false): float32 matrix products on XLA's CUDA plugin in TF32 (XLA's default, on) or in full float32 (off; PyTorch's allow_tf32=False); an error on any other backend (Config.TF32 wins)", User)
	// MemoryFraction is GOACCEL_MEMORY_FRACTION.
	MemoryFraction = str("GOACCEL_MEMORY_FRACTION", "the share of each GPU's memory a process may use on XLA's CUDA plugin, above 0 and at most 1 (plugin default 0.75; JAX's XLA_PYTHON_CLIENT_MEM_FRACTION); an error on any other backend (Config.MemoryFraction wins)", User)
	// Preallocate is GOACCEL_PREALLOCATE.
	Preallocate = str("GOACCEL_PREALLOCATE", "on or off: XLA's CUDA plugin reserves its memory share at start (on; JAX's XLA_PYTHON_CLIENT_PREALLOCATE) or grows into it (off, go-xla's default); an error on any other backend (Config.Preallocate wins)", User)
	// GoPJRTCUDAChecks is GOPJRT_CUDA_CHECKS.
	GoPJRTCUDAChecks = str("GOPJRT_CUDA_CHECKS", "read by go-xla: 0 turns off its warning about the nvidia/ folder it expects beside the CUDA plugin; goaccel sets 0 unless set when it found NVIDIA's libraries elsewhere (goaccel env says where)", User, Goaccel)
	// NoAutoInstall is GOMLX_NO_AUTO_INSTALL.
	NoAutoInstall = boolean("GOMLX_NO_AUTO_INSTALL", "read by GoMLX: never download a PJRT plugin (goaccel never asks it to)", User)
	// CUDAVisibleDevices is CUDA_VISIBLE_DEVICES.
	CUDAVisibleDevices = str("CUDA_VISIBLE_DEVICES", "the GPUs a process may use (empty or -1: none); goaccel launch gives each rank its share", User, Launch)
	// NvidiaVisibleDevices is NVIDIA_VISIBLE_DEVICES.
	NvidiaVisibleDevices = str("NVIDIA_VISIBLE_DEVICES", "the GPUs a container was given (reported by goaccel env only)", Container)
	// VirtualEnv is VIRTUAL_ENV.
	VirtualEnv = str("VIRTUAL_ENV", "the active Python virtual environment, whose site-packages plugin discovery searches", User)
	// PythonNoUserSite is PYTHONNOUSERSITE.
	PythonNoUserSite = str("PYTHONNOUSERSITE", "set to 1 for the python3 that plugin discovery asks for its site-packages", Goaccel)
)

// Threads and cores.
var (
	// GoMaxProcs is GOMAXPROCS.
	GoMaxProcs = integer("GOMAXPROCS", "the Go runtime's threads; goaccel launch sets cores/nproc_per_node unless set", User, Launch)
	// OMPNumThreads is OMP_NUM_THREADS.
	OMPNumThreads = integer("OMP_NUM_THREADS", "OpenMP's threads; goaccel launch sets cores/nproc_per_node unless set, goaccel bench sets it for PyTorch", User, Launch, Goaccel)
	// CPUs is GOACCEL_CPUS.
	CPUs = str("GOACCEL_CPUS", "the CPUs goaccel launch bound the rank to, as a list such as 0-3,8", Launch)
)

// goaccel's home folder and `goaccel setup`.
var (
	// Home is GOACCEL_HOME.
	Home = str("GOACCEL_HOME", "goaccel's install folder, which goaccel setup fills and discovery reads (default $XDG_DATA_HOME/goaccel)", User)
	// XDGDataHome is XDG_DATA_HOME.
	XDGDataHome = str("XDG_DATA_HOME", "the user's data folder (absolute); goaccel's home is its goaccel/ unless GOACCEL_HOME is set (default ~/.local/share)", User, OS)
	// PipRootUserAction is PIP_ROOT_USER_ACTION.
	PipRootUserAction = str("PIP_ROOT_USER_ACTION", "set to ignore for the pip that goaccel setup runs", Goaccel)
	// PipUser is PIP_USER.
	PipUser = str("PIP_USER", "set to 0 for the pip that goaccel setup runs (it installs into goaccel's home, not ~/.local)", Goaccel)
)

// The Hugging Face Hub and its cache (package hub, which models/auto and goaccel download use),
// read as huggingface_hub reads them (its constants.py), so that Go and Python share one cache.
var (
	// HFEndpoint is HF_ENDPOINT.
	HFEndpoint = str("HF_ENDPOINT", "the Hugging Face Hub's address (default https://huggingface.co); the token is sent to its origin only", User)
	// HFHubCache is HF_HUB_CACHE.
	HFHubCache = str("HF_HUB_CACHE", "the Hugging Face hub cache folder (models--org--name/snapshots/...), shared with huggingface_hub (default $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub)", User)
	// HuggingFaceHubCache is HUGGINGFACE_HUB_CACHE.
	HuggingFaceHubCache = str("HUGGINGFACE_HUB_CACHE", "huggingface_hub's older name for HF_HUB_CACHE, read when HF_HUB_CACHE is not set", User)
	// HFHome is HF_HOME.
	HFHome = str("HF_HOME", "Hugging Face's home folder; the hub cache is its hub/ and the token file its token unless HF_HUB_CACHE or HF_TOKEN_PATH is set (default $XDG_CACHE_HOME/huggingface)", User)
	// XDGCacheHome is XDG_CACHE_HOME.
	XDGCacheHome = str("XDG_CACHE_HOME", "the user's cache folder; Hugging Face's home is its huggingface/ unless HF_HOME is set (default ~/.cache)", User, OS)
	// HFToken is HF_TOKEN.
	HFToken = str("HF_TOKEN", "a Hugging Face access token, for a gated or private repository (a --token flag wins); sent to HF_ENDPOINT's origin only, never shown", User).secret()
	// HFHubToken is HUGGING_FACE_HUB_TOKEN.
	HFHubToken = str("HUGGING_FACE_HUB_TOKEN", "huggingface_hub's older name for HF_TOKEN, read when HF_TOKEN is not set", User).secret()
	// HFTokenPath is HF_TOKEN_PATH.
	HFTokenPath = str("HF_TOKEN_PATH", "the file holding the token (`hf auth login` writes it), read when neither HF_TOKEN nor HUGGING_FACE_HUB_TOKEN is set (default $HF_HOME/token); shown as set or unset only", User).secret()
	// HFHubOffline is HF_HUB_OFFLINE.
	HFHubOffline = str("HF_HUB_OFFLINE", "1/ON/YES/TRUE: no network call to the Hub at all, the cache alone answers (0/OFF/NO/FALSE: off)", User)
	// TransformersOffline is TRANSFORMERS_OFFLINE.
	TransformersOffline = str("TRANSFORMERS_OFFLINE", "transformers' name for HF_HUB_OFFLINE, read when HF_HUB_OFFLINE is not set", User)
	// HFHubEtagTimeout is HF_HUB_ETAG_TIMEOUT.
	HFHubEtagTimeout = str("HF_HUB_ETAG_TIMEOUT", "whole seconds a metadata request to the Hub may take before the cache is used instead (default 10)", User)
	// HFHubDownloadTimeout is HF_HUB_DOWNLOAD_TIMEOUT.
	HFHubDownloadTimeout = str("HF_HUB_DOWNLOAD_TIMEOUT", "whole seconds a download may wait for the next bytes (default 10)", User)
)

// Host memory (the block cache linked in with accelerator, and the hostmalloc package).
var (
	// HostMalloc is GOACCEL_HOST_MALLOC.
	HostMalloc = choice("GOACCEL_HOST_MALLOC", []string{"system", "keep"}, "unset: the block cache linked into every program that imports hostmalloc keeps malloc's large freed blocks for reuse; system: glibc's defaults; keep: a program importing hostmalloc re-executes itself with GLIBC_TUNABLES that keep all freed memory (the cache off)", User)
	// GlibcTunables is GLIBC_TUNABLES.
	GlibcTunables = str("GLIBC_TUNABLES", "glibc's settings, read at start; hostmalloc sets them when it re-executes, and leaves the user's own alone; when set, the block cache is off", User, Goaccel)
)

// goaccel launch's and goaccel bench's own.
var (
	// LaunchGuardian is GOACCEL_LAUNCH_GUARDIAN.
	LaunchGuardian = str("GOACCEL_LAUNCH_GUARDIAN", "1 in the guardian process goaccel launch starts to clean up after it", Launch)
	// LaunchSelfTest is GOACCEL_LAUNCH_SELFTEST.
	LaunchSelfTest = str("GOACCEL_LAUNCH_SELFTEST", "1 in the ranks goaccel launch --selftest starts (its own executable, checking discovery, a barrier and an all-reduce)", Launch)
	// ExampleChild is GOACCEL_EXAMPLE_CHILD.
	ExampleChild = str("GOACCEL_EXAMPLE_CHILD", "1 in an example's test binary that its own tests start as the program (examples/internal/exampletest)", Goaccel)
	// JobSecret is GOACCEL_JOB_SECRET.
	JobSecret = str("GOACCEL_JOB_SECRET", "the secret every launcher of a job of several nodes proves to the others (the same on every node, at least 16 bytes; never sent: a challenge and an HMAC); a job of one node makes its own; goaccel launch removes it from its ranks", User).secret()
	// LaunchDebug is GOACCEL_LAUNCH_DEBUG.
	LaunchDebug = boolean("GOACCEL_LAUNCH_DEBUG", "true or 1: goaccel launch's master logs every line it receives from the launchers, and each launcher every PMI line of its ranks, on stderr", User)
	// SlurmctldPort is GOACCEL_SLURMCTLD_PORT.
	SlurmctldPort = integer("GOACCEL_SLURMCTLD_PORT", "scripts/slurm_cluster.sh: the port of its slurmctld (default 16817; the tests choose a free one)", User, Goaccel)
	// SlurmdPort is GOACCEL_SLURMD_PORT.
	SlurmdPort = integer("GOACCEL_SLURMD_PORT", "scripts/slurm_cluster.sh: the port of its slurmd (default 16818; the tests choose a free one)", User, Goaccel)
	// BenchPython is GOACCEL_BENCH_PYTHON.
	BenchPython = str("GOACCEL_BENCH_PYTHON", "the Python that goaccel bench runs the PyTorch side with (default python3)", User)
	// BenchCPUProfile is GOACCEL_BENCH_CPUPROFILE.
	BenchCPUProfile = str("GOACCEL_BENCH_CPUPROFILE", "a file a goaccel bench worker writes its Go CPU profile to", User)
	// TorchPython is GOACCEL_TORCH_PYTHON.
	TorchPython = str("GOACCEL_TORCH_PYTHON", "tests only: a Python with torch and transformers (outside the repository) that the model packages' tests load goaccel's exported folders with; unset, those halves skip loudly", User)
	// CI is CI.
	CI = str("CI", "set on CI services: a test missing an optional tool (plugin, MPI) fails instead of skipping", User, CIService)
)

// rankMarks are the variables by which a launcher tells a process that it is one rank of a
// job: torchrun's and goaccel launch's RANK and WORLD_SIZE, MPICH's PMI_* (PMI_FD: its
// mpiexec's inherited socket), Open MPI's OMPI_COMM_WORLD_*, Slurm's SLURM_STEP_ID (every task srun
// starts has it; a batch script, whose SLURM_PROCID is 0, does not). The spawn package starts
// no ranks of its own when one of them is set (RankMark).
var rankMarks = []*Var{Rank.Var, WorldSize.Var, PMIRank.Var, PMISize.Var, PMIID.Var, PMIFD.Var, PMIPort.Var,
	OMPIRank.Var, OMPISize.Var, SlurmStepID.Var}
