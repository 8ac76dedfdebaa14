// Package launch is `goaccel launch`: it starts one program as several processes (ranks), on
// one machine or several, and stops them all when one fails — the job of torchrun and
// horovodrun. The command line is torchrun's (--nproc_per_node, --nnodes, --node_rank,
// --master_addr, --master_port, --standalone, --max_restarts, --log_dir, --tee, snake or kebab
// case) or horovodrun's (-np 4 -H host1:2,host2:2); see Main. Run is the same as a library call.
//
// # Process model
//
// Each node (machine) runs one launcher; the launcher of node_rank 0 is the master. The master
// listens on --master_addr:--master_port (one node: 127.0.0.1 and a free port), for launchers
// only: every connection first proves the job secret (secret.go: a challenge and an HMAC both
// ways; Config.Secret, $GOACCEL_JOB_SECRET or --job_secret_file, made by the launcher for one
// node or -H), and anything else is refused and logged. On that port it serves
//
//   - the rendezvous of the launchers: every launcher (the master's own included) connects,
//     says how many ranks it runs, and once all --nnodes have joined (an elastic job: see
//     below) gets its node rank, its first global rank and the world size (ranks are numbered
//     node after node, in node_rank order);
//   - MPICH's simple PMI-1 key-value store and barrier, which MPI_Init uses to find the other
//     ranks: each rank talks PMI to its own launcher over an inherited socket (PMI_FD, with
//     PMI_RANK and PMI_SIZE, as under Hydra), which answers what it knows and relays puts, gets,
//     barriers and MPI_Abort to the master (pmi.go; the commands are listed at pmiRelay.onPMI;
//     MPICH learns which ranks share a node from the PMI_process_mapping key, so it uses shared
//     memory within a node and the network between nodes).
//
// # Ports
//
// A job uses two ports of the master's machine, both to be open between the nodes: the
// launcher's own, --master_port P (the launchers', behind the job secret), and the ranks'
// MASTER_PORT, which is P+1, where rank 0 may bind a store of its own and the other ranks
// connect (PyTorch's init_process_group("gloo"|"nccl") does; torchrun's agent hosts that
// store itself). Without --master_port (one node) both are free ports the master picks; the
// master sends MASTER_PORT to every node. A P+1 already in use is reported as a warning.
//
// Each launcher starts its local ranks itself, as child processes in their own process
// groups, so it knows their pids, exit codes and signals. Every rank's environment has
// torchrun's RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK (= NODE_RANK),
// GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (see Ports) and TORCHELASTIC_RESTART_COUNT (= GOACCEL_RESTART_COUNT);
// MPICH's PMI_FD, PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS; its share of
// the node: CUDA_VISIBLE_DEVICES (a contiguous share of the visible GPUs, or one shared GPU
// when there are more ranks than GPUs) or, without GPUs, GOACCEL_DEVICES = total/nproc_per_node
// of the CPU devices when $GOACCEL_DEVICES sets the total, else 1; GOMAXPROCS and
// OMP_NUM_THREADS = max(1, cores/nproc_per_node) unless already set; and, with several local
// ranks and no more ranks than CPUs, a CPU binding: rank i runs on the i-th contiguous block of
// the launcher's CPUs (listed in GOACCEL_CPUS), because XLA's CPU client and the Go runtime size
// their thread pools from the CPU mask (Config.NoCPUBind, --no_cpu_bind: off); MPICH's
// MPIR_CVAR_{BCAST,ALLREDUCE,BARRIER}_POSIX_INTRA_ALGORITHM=mpir unless already set (MPICH's
// shared-memory collectives spin badly with more ranks than cores); when the launcher found an
// MPI library, and each unless already set: GOACCEL_MPI_LIB (that library), MPI4PY_LIBMPI
// (the MPICH-ABI libmpi.so.12 beside it, which mpi4py 4 loads), and its folder in front of
// LD_LIBRARY_PATH (for programs linked with -lmpi). Variables of an enclosing launcher
// (PMI_FD, PMI_PORT, PMIX_*, OMPI_COMM_WORLD_*) and GOACCEL_JOB_SECRET are removed.
//
// Two launchers on one host, `--nnodes 2 --node_rank 0|1 --master_addr 127.0.0.1`, go through
// the same code as two machines: the tests run that. horovodrun's -H starts the launchers of
// the other hosts itself: on this machine for its own names (localhost, 127.0.0.1, its host
// name or addresses), by `ssh HOST 'cd $PWD && exec env GOACCEL_HOME=... /same/path/goaccel launch
// --node_rank i ...'` for others, passing this machine's GOACCEL_HOME, GOACCEL_MPI_LIB and
// PJRT_PLUGIN_LIBRARY_PATH when set (that needs the same binary and working directory there, and
// is untested here). --hostfile reads the same list from a file (parseHostfile).
//
// While the nodes join, the master and the other launchers say every 10 s what they wait for;
// the master answers each join at once ("joined"), so a node that reached another program on
// the port fails naming host:port. --selftest runs this executable as every rank
// (SelfTestCommand, see selftest.go), and its node_rank > 0 launchers give up after 8 s.
//
// # Output
//
// Every rank's stdout and stderr go to LOG_DIR/attempt_A/rank_R/{stdout,stderr}.log (LOG_DIR:
// --log_dir, or a new temporary folder), which each launcher names when its ranks start, with
// whose output its terminal shows. By default that is rank 0's stdout and stderr, on the
// master's terminal (the other nodes' show none); --tee 1, 2 or 3 shows every local rank's
// stdout, stderr or both instead, and --tee 0 nothing. With more than one rank, terminal
// lines are prefixed "[rank N] ". When the terminal's side goes away (`| head` exits), the
// launcher stops copying there and supervises the job to its end.
//
// # Failure semantics (torchrun's)
//
//   - When a rank exits non-zero or dies by a signal, its launcher reports it to the master,
//     which tells every launcher to stop: the other ranks get SIGTERM, then SIGKILL after
//     Config.StopGrace (5 s). The first report of an attempt wins, so the rank named is the
//     one that failed first, not a survivor that MPI tore down after it.
//   - Every launcher then exits 1 with a message naming that rank, its node, host and pid, how
//     it ended ("exit code 3", "signal: killed") and its log folder; the launcher where it ran
//     also prints the last lines of its stderr.
//   - MPI_Abort in a rank is that rank's failure ("MPI_Abort with error code 5"), handled as
//     above: MPICH only tells the PMI server and carries on, leaving the kill to the launcher.
//   - With --max_restarts N the whole group (every node) restarts, up to N times; the number
//     of restarts so far is in TORCHELASTIC_RESTART_COUNT, and resuming from the latest
//     checkpoint is the program's part.
//   - Success is every rank of every node exiting 0, whether or not it finalized MPI.
//   - Ctrl-C, SIGTERM, SIGHUP (a closed terminal or ssh session) or SIGQUIT (no goroutine
//     dump) on any launcher stops every rank of the job (exit status 130); a second one kills
//     the local ranks at once. A launcher that goes away stops the job too. --timeout stops
//     the whole job after that long.
//   - A launcher killed outright (SIGKILL) leaves nothing running: each rank has Linux's
//     parent-death signal (SIGKILL, from a thread that lives as long as the launcher), and
//     the launcher's guardian, a second process of the same executable that knows the ranks'
//     pids through a pipe, kills their process groups and removes their /dev/shm files when
//     that pipe closes without a goodbye. The other nodes see the launcher's connection close
//     and stop their ranks.
//   - A rank hanging in a collective is the library's to report (its collective timeouts);
//     --timeout is the launcher's backstop.
//   - When an attempt's ranks are gone, the launcher removes the /dev/shm files they left
//     (the files they mapped, and new mpich_shm_* files that no live process uses).
//
// # Elastic jobs
//
// --nnodes MIN:MAX (Config.MinNodes) makes a job of MIN to MAX nodes, as torchrun's elastic
// agent runs: the launcher started with --node_rank 0 is the master; the others are started
// without --node_rank, join it with an id (host and launcher pid) and get their node rank, the
// number of nodes (GROUP_WORLD_SIZE) and their first rank from it at every start. The job
// starts when MAX joined, or MIN and then --rdzv_conf last_call_timeout (default 30 s) passed.
// A node that leaves (its launcher's connection closes) or whose rank fails stops the attempt:
// the launchers still there join again and the job is formed anew without it, a restart that
// counts against --max_restarts. A launcher that joins while the job runs on fewer than MAX
// nodes stops the attempt at once and is in the next, without counting a restart. Fewer than
// MIN within --join_timeout ends the job naming the nodes missing; the master's failure ends
// it (the c10d rendezvous of torchrun has the same limit). SIGTERM to a launcher other than the
// master leaves gracefully: its ranks get SIGTERM (trainer.Interrupt saves at the next step
// boundary, agreed by every rank), and once every rank stopped cleanly the job is formed anew
// without that node at once, counting no restart. Every formation is logged, with the nodes
// that left or came and the old and new world size. See elastic.go.
//
// $GOACCEL_LAUNCH_DEBUG=1 makes the master log every line it receives from the launchers, and
// every launcher every PMI line of its ranks.
//
// # MPI
//
// With more than one rank, Main refuses to start without an MPI library (internal/mpi's Find;
// the error says how to install MPICH: `goaccel setup`), or with Open MPI's, unless --no_mpi_check
// (which a PyTorch job, whose ranks need no MPI, passes).
// It passes the library found to the ranks as GOACCEL_MPI_LIB. The PMI server speaks PMI-1
// only, so the ranks get MPIR_CVAR_PMI_VERSION=1. MPI_Comm_spawn (PMI's multi-line spawn
// command) is not supported: the rank's call fails, and the master says so on its stderr.
// Open MPI uses PMIx instead: under Open MPI
// (and under Slurm) run the program with the cluster's own `mpirun -n 4 ./train` or
// `srun --mpi=pmi2 -n 4 ./train`; goaccel's library reads OMPI_COMM_WORLD_*, PMI_* or SLURM_* itself.
//
// # Without a launcher: the env:// rendezvous
//
// A program started by anything that sets torch's variables and no PMI (Kubeflow's
// PyTorchJob, `srun -n 4 ./train` on a cluster whose MpiDefault is none, a loop over ssh)
// meets the others by itself, as init_process_group("env://") does: accelerator.New calls
// EnvPlace and Join (rendezvous.go), which run this package's server in rank 0's process at
// MASTER_ADDR:MASTER_PORT (Slurm: the first host of SLURM_STEP_NODELIST, a port derived from
// SLURM_JOB_ID) and give every process's MPI a PMI socket relayed to it.
package launch
