#!/usr/bin/env bash
# A Slurm cluster of one machine for goaccel's tests: Debian's slurm-wlm and munge, a generated
# slurm.conf, slurmctld and slurmd on this machine (addresses on 127.0.0.1 only).
#
#   scripts/slurm_cluster.sh start [DIR]   start it; prints `export SLURM_CONF=DIR/slurm.conf`
#   scripts/slurm_cluster.sh stop [DIR]    stop the daemons it started and remove DIR
#   scripts/slurm_cluster.sh status [DIR]  sinfo
#
# DIR defaults to /tmp/goaccel-slurm. Needs root (slurmd runs the jobs' tasks as their users)
# and the packages: apt-get install -y slurm-wlm munge (.ci/run installs them). The cluster's
# MpiDefault is none, as on many real clusters: plain `srun -n 2 ./train` starts the tasks
# without any PMI, and `srun --mpi=pmi2` gives them Slurm's PMI-2 server.
set -euo pipefail
cmd=${1:-}
dir=${2:-/tmp/goaccel-slurm}
# Ports of their own, away from a real cluster's 6817/6818.
ctld_port=${GOACCEL_SLURMCTLD_PORT:-16817}
slurmd_port=${GOACCEL_SLURMD_PORT:-16818}

die() { echo "slurm_cluster.sh: $*" >&2; exit 1; }

start() {
	[[ $(id -u) == 0 ]] || die "needs root (slurmd starts the tasks as the job's user)"
	for p in slurmctld slurmd munged srun sbatch; do
		command -v "$p" >/dev/null || die "$p not found: apt-get install -y slurm-wlm munge"
	done
	[[ -e $dir/slurmctld.pid ]] && die "$dir already holds a cluster: scripts/slurm_cluster.sh stop $dir first"
	mkdir -p "$dir"/{state,spool,log,munge}
	local host cpus mem
	host=$(hostname -s)
	cpus=$(nproc)
	mem=$(awk '/MemTotal/ {print int($2/1024/2)}' /proc/meminfo)
	# munge: a key of this cluster only, and its own socket.
	dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
	chmod 600 "$dir/munge/munge.key"
	munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
		--pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
	cat >"$dir/slurm.conf" <<EOF
# Written by goaccel's scripts/slurm_cluster.sh: one machine, addresses on 127.0.0.1 only.
ClusterName=goaccel
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
LaunchParameters=use_interactive_step
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
# Requeue (scontrol requeue, sbatch --requeue) without waiting for the default 2 minutes.
MinJobAge=30
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
	export SLURM_CONF=$dir/slurm.conf
	slurmctld -f "$SLURM_CONF"
	slurmd -f "$SLURM_CONF"
	for _ in $(seq 60); do
		if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
			echo "export SLURM_CONF=$SLURM_CONF"
			return 0
		fi
		sleep 0.5
	done
	sinfo >&2 || true
	tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
	stop
	die "the cluster did not come up within 30 s (logs above)"
}

stopPid() { # the daemon whose pid file is $1, by that pid only
	local f=$1 pid
	[[ -s $f ]] || return 0
	pid=$(cat "$f")
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
}

stop() {
	[[ -d $dir && -e $dir/slurm.conf ]] || { rm -rf "$dir"; return 0; }
	export SLURM_CONF=$dir/slurm.conf
	scancel --full -u root 2>/dev/null || true
	stopPid "$dir/slurmd.pid"
	stopPid "$dir/slurmctld.pid"
	stopPid "$dir/munge/munged.pid"
	rm -rf "$dir"
}

case $cmd in
start) start ;;
stop) stop ;;
status) SLURM_CONF=$dir/slurm.conf sinfo ;;
*) die "usage: $0 start|stop|status [DIR]" ;;
esac
