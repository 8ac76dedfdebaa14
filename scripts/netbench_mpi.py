"""Raw MPI figures of the link between two ranks, for scripts/netbench.sh (run under goaccel launch).

Rank 0 prints one JSON line: the median time of an 8-byte all-reduce (the latency), of a float32
all-reduce of NBYTES (the exact gradients' collective) and of an all-to-all then an all-gather of
the same elements in 16 bits (the collectives of GOACCEL_GRADIENT_COMPRESSION).

  goaccel launch -np 2 python3 scripts/netbench_mpi.py LINK [NBYTES]
"""
import json, sys, time

import numpy as np
from mpi4py import MPI


def median_time(fn, reps, warm=1):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        MPI.COMM_WORLD.Barrier()
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def main():
    comm = MPI.COMM_WORLD
    n = comm.Get_size()
    link = sys.argv[1]
    nbytes = int(float(sys.argv[2])) if len(sys.argv) > 2 else 91_000_000
    small, small_out = np.ones(1, np.float64), np.zeros(1, np.float64)
    small_s = median_time(lambda: comm.Allreduce(small, small_out), 200, warm=20)
    elems = nbytes // 4
    x, y = np.ones(elems, np.float32), np.zeros(elems, np.float32)
    allreduce_s = median_time(lambda: comm.Allreduce(x, y), 3)
    chunk = (elems + n - 1) // n
    wire = np.zeros(2 * chunk * n, np.uint8)
    recv = np.zeros_like(wire)
    mine = np.zeros(2 * chunk, np.uint8)

    def compressed():
        comm.Alltoall(wire, recv)
        comm.Allgather(mine, wire)

    a2a_s = median_time(compressed, 3)
    if comm.Get_rank() == 0:
        print(json.dumps(dict(kind="mpi", link=link, ranks=n, bytes=elems * 4, small_s=small_s,
                              allreduce_s=allreduce_s, a2a_gather_s=a2a_s)), flush=True)


if __name__ == "__main__":
    main()
