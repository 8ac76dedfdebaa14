#!/usr/bin/env bash
# A Slurm cluster of one machine for goaccel's tests: Debian's slurm-wlm and munge, a generated
# slurm.conf, slurmctld and slurmd on this machine.
#
#   scripts/slurm_cluster.sh start [DIR] [NODES]  start it; prints `export SLURM_CONF=DIR/slurm.conf`
#   scripts/slurm_cluster.sh stop [DIR]           stop the daemons it started and remove DIR
#   scripts/slurm_cluster.sh status [DIR]         sinfo
#   scripts/slurm_cluster.sh exec DIR NODE CMD... run CMD on node NODE (n1, n2) of a 2-node cluster
#
# DIR defaults to /tmp/goaccel-slurm. NODES is 1 (the default: one node named after this
# machine, addresses on 127.0.0.1 only) or 2: two nodes, n1 and n2, each a network namespace
# of its own (10.233.S.1 and .2 on a bridge that holds slurmctld's 10.233.S.254), with its own
# host name and an /etc/hosts that names both, and its own slurmd (slurmd -N n1): a job of
# `--nodes 2` gets SLURM_JOB_NODELIST=n[1-2], whose names resolve on the nodes as on a real
# cluster. Needs root (slurmd runs the jobs' tasks as their users; the namespaces) and the
# packages: apt-get install -y slurm-wlm munge (.ci/run installs them), and ip, unshare and
# nsenter for 2 nodes. The cluster's MpiDefault is none, as on many real clusters: plain `srun -n 2
# ./train` starts the tasks without any PMI, and `srun --mpi=pmi2` gives them Slurm's PMI-2
# server.
set -euo pipefail
cmd=${1:-}
dir=${2:-/tmp/goaccel-slurm}
nodes=${3:-1}
# Ports of their own, away from a real cluster's 6817/6818.
ctld_port=${GOACCEL_SLURMCTLD_PORT:-16817}
slurmd_port=${GOACCEL_SLURMD_PORT:-16818}

die() { echo "slurm_cluster.sh: $*" >&2; exit 1; }
# innode NODE CMD...: CMD in node NODE's network namespace, on its host name, with its /etc/hosts.
# (nsenter, not ip netns exec, which mounts a /sys of its own, without the cgroups slurmd reads.)
innode() {
	local node=$1
	shift
	nsenter --net="/run/netns/$(cat "$dir/net/ns-$node")" unshare --uts --mount sh -c \
		'mount --bind "$0" /etc/hosts && hostname "$1" && shift && exec "$@"' "$dir/net/hosts" "$node" "$@"
}

# network makes the two nodes' namespaces, their veth pairs and the bridge that joins them to
# this machine; it sets ctld_addr and the nodes' addresses (addr_n1, addr_n2). The names and the
# subnet come from DIR's checksum, so that clusters of different DIRs do not collide.
network() {
	for p in ip unshare nsenter; do command -v $p >/dev/null || die "2 nodes need $p (iproute2, util-linux)"; done
	local sum id subnet i ns
	sum=$(printf %s "$dir" | cksum | cut -d' ' -f1)
	id=$((sum % 100000))
	subnet=$((1 + sum % 250))
	mkdir -p "$dir/net"
	ctld_addr=10.233.$subnet.254
	echo "gasb$id" >"$dir/net/bridge"
	ip link add "gasb$id" type bridge
	ip addr add "$ctld_addr/24" dev "gasb$id"
	ip link set "gasb$id" up
	printf '127.0.0.1 localhost\n' >"$dir/net/hosts"
	for i in 1 2; do
		ns=goaccel-slurm-$id-n$i
		ip netns add "$ns"
		echo "$ns" >"$dir/net/ns-n$i"
		ip link add "gas${id}n$i" type veth peer name "gas${id}p$i"
		ip link set "gas${id}p$i" netns "$ns"
		ip link set "gas${id}n$i" master "gasb$id" up
		ip -n "$ns" addr add "10.233.$subnet.$i/24" dev "gas${id}p$i"
		ip -n "$ns" link set "gas${id}p$i" up
		ip -n "$ns" link set lo up
		printf '10.233.%s.%s n%s\n' "$subnet" "$i" "$i" >>"$dir/net/hosts"
		printf -v "addr_n$i" %s "10.233.$subnet.$i"
	done
	printf '%s %s\n' "$ctld_addr" "$(hostname -s)" >>"$dir/net/hosts"
}

start() {
	[[ $(id -u) == 0 ]] || die "needs root (slurmd starts the tasks as the job's user)"
	[[ $nodes == 1 || $nodes == 2 ]] || die "NODES $nodes: want 1 or 2"
	for p in slurmctld slurmd munged srun sbatch; do
		command -v "$p" >/dev/null || die "$p not found: apt-get install -y slurm-wlm munge"
	done
	[[ -e $dir/slurmctld.pid ]] && die "$dir already holds a cluster: scripts/slurm_cluster.sh stop $dir first"
	mkdir -p "$dir"/{state,spool,log,munge}
	local host cpus mem ctld_addr=127.0.0.1 nodelines addr_n1 addr_n2
	host=$(hostname -s)
	cpus=$(nproc)
	mem=$(awk '/MemTotal/ {print int($2/1024/2)}' /proc/meminfo)
	# munge: a key of this cluster only, and its own socket.
	dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
	chmod 600 "$dir/munge/munge.key"
	munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
		--pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
	if [[ $nodes == 1 ]]; then
		mkdir -p "$dir/spool/$host"
		nodelines="NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN"
	else
		network
		mkdir -p "$dir/spool/n1" "$dir/spool/n2"
		nodelines="NodeName=n1 NodeAddr=$addr_n1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
NodeName=n2 NodeAddr=$addr_n2 CPUs=$cpus RealMemory=$mem State=UNKNOWN"
	fi
	cat >"$dir/slurm.conf" <<CONF
# Written by goaccel's scripts/slurm_cluster.sh: one machine, $nodes node(s).
ClusterName=goaccel
SlurmctldHost=$host($ctld_addr)
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
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
# Requeue (scontrol requeue, sbatch --requeue) without waiting for the default 2 minutes.
MinJobAge=30
KillWait=5
$nodelines
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
	export SLURM_CONF=$dir/slurm.conf
	slurmctld -f "$SLURM_CONF"
	if [[ $nodes == 1 ]]; then
		slurmd -f "$SLURM_CONF"
	else
		innode n1 slurmd -f "$SLURM_CONF" -N n1
		innode n2 slurmd -f "$SLURM_CONF" -N n2
	fi
	for _ in $(seq 60); do
		if [[ $(sinfo -h -N -o '%N %T' 2>/dev/null | grep -cE ' (idle|mixed|allocated)$') == "$nodes" ]]; then
			echo "export SLURM_CONF=$SLURM_CONF"
			return 0
		fi
		sleep 0.5
	done
	sinfo -N >&2 || true
	tail -n 20 "$dir"/log/slurm*.log >&2 || true
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
	local f
	for f in "$dir"/slurmd*.pid; do stopPid "$f"; done
	stopPid "$dir/slurmctld.pid"
	stopPid "$dir/munge/munged.pid"
	if [[ -d $dir/net ]]; then
		# Deleting a namespace takes its veth end along; the bridge goes last.
		for f in "$dir"/net/ns-*; do ip netns del "$(cat "$f")" 2>/dev/null || true; done
		ip link del "$(cat "$dir/net/bridge")" 2>/dev/null || true
	fi
	rm -rf "$dir"
}

case $cmd in
start) start ;;
stop) stop ;;
status) SLURM_CONF=$dir/slurm.conf sinfo -N ;;
exec)
	[[ -e $dir/net/ns-${3:-} ]] || die "exec DIR NODE CMD...: $dir has no node ${3:-} (a cluster of 2 nodes has n1 and n2)"
	node=$3
	shift 3
	SLURM_CONF=$dir/slurm.conf innode "$node" "$@"
	;;
*) die "usage: $0 start [DIR] [NODES] | stop [DIR] | status [DIR] | exec DIR NODE CMD..." ;;
esac
