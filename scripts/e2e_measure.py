#!/usr/bin/env python3
"""Run one end-to-end fine-tune (docs/endtoend.md) under /usr/bin/time -v and record what a
shared machine lets one measure: wall time, user and system CPU time, peak RSS, the load
average before and after, and, every half second, the run's CPU seconds (utime + stime of
every process under /usr/bin/time, from /proc) so that a steady-state rate per training step
can be read between two of goaccel's metrics.jsonl records (--metrics) without the
compilation and the evaluation.

It prints one JSON line and appends it to --record. Usage:

    scripts/e2e_measure.py --name NAME --record runs.jsonl [--metrics RUN/metrics.jsonl] -- COMMAND...
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def load():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def descendants(pid):
    """pid and every process below it, from /proc/*/stat's parent ids."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parent[int(entry)] = int(fields[1])
            except OSError:
                continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(c for c, pp in parent.items() if pp == p)
    return out


def cpu_seconds(pids):
    """utime + stime (all threads) of the processes, in seconds."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            continue
    return total / TICK


def time_v(text):
    keys = {"User time (seconds)": "user_s", "System time (seconds)": "sys_s",
            "Maximum resident set size (kbytes)": "max_rss_kb", "Elapsed (wall clock) time (h:mm:ss or m:ss)": "wall"}
    out = {}
    for line in text.splitlines():
        k, _, v = line.strip().rpartition(": ")
        if k in keys:
            out[keys[k]] = v
    parts = [float(x) for x in out.pop("wall", "0").split(":")]
    out["wall_s"] = round(sum(x * 60 ** i for i, x in enumerate(reversed(parts))), 2)
    out["user_s"], out["sys_s"] = float(out.get("user_s", 0)), float(out.get("sys_s", 0))
    out["cpu_s"] = round(out["user_s"] + out["sys_s"], 2)
    out["max_rss_mib"] = round(int(out.pop("max_rss_kb", 0)) / 1024)
    return out


def steady_rate(samples, metrics, first_step):
    """Wall and CPU seconds per step between the first train record of metrics.jsonl at or after
    first_step and the last one before the first evaluation, the CPU seconds interpolated in the
    samples at the records' times."""
    recs, evals = [], []
    with open(metrics) as f:
        for line in f:
            r = json.loads(line)
            t = datetime.datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", r["time"]).replace("Z", "+00:00"))
            if r.get("kind") == "train":
                recs.append((r["step"], t.timestamp()))
            elif r.get("kind") == "eval":
                evals.append(t.timestamp())
    # A step's record can come after an evaluation (the last step's does): only records before
    # the first evaluation count.
    recs = [r for r in recs if r[0] >= first_step and (not evals or r[1] < min(evals))]
    if len(recs) < 2:
        return None

    def cpu_at(t):
        for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
            if t0 <= t <= t1:
                return c0 + (c1 - c0) * (t - t0) / (t1 - t0 or 1)
        return None

    (s0, t0), (s1, t1) = recs[0], recs[-1]
    c0, c1 = cpu_at(t0), cpu_at(t1)
    out = {"steps": [s0, s1], "wall_s_per_step": round((t1 - t0) / (s1 - s0), 3)}
    if c0 is not None and c1 is not None:
        out["cpu_s_per_step"] = round((c1 - c0) / (s1 - s0), 3)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", required=True)
    p.add_argument("--record", required=True, help="JSON-lines file to append the result to")
    p.add_argument("--metrics", help="goaccel's metrics.jsonl: also the steady-state rate per step")
    p.add_argument("--first_step", type=int, default=10, help="with --metrics: the rate from this step's record on")
    p.add_argument("command", nargs="+")
    args = p.parse_args()
    before = load()
    start = time.time()
    proc = subprocess.Popen(["/usr/bin/time", "-v"] + args.command, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    samples = []
    out_chunks = []
    def drain(stream, sink):
        for line in stream:
            sink.append(line)

    err_chunks = []
    threads = [threading.Thread(target=drain, args=(proc.stdout, out_chunks)),
               threading.Thread(target=drain, args=(proc.stderr, err_chunks))]
    for t in threads:
        t.start()
    while proc.poll() is None:
        samples.append((time.time(), cpu_seconds(descendants(proc.pid))))
        time.sleep(0.5)
    for t in threads:
        t.join()
    stdout, stderr = "".join(out_chunks), "".join(err_chunks)
    res = {"name": args.name, "start": datetime.datetime.fromtimestamp(start, datetime.timezone.utc).isoformat(
        timespec="seconds"), "load_before": before, "load_after": load(), "rc": proc.returncode}
    res.update(time_v(stderr))
    if args.metrics and os.path.exists(args.metrics):
        res["steady"] = steady_rate(samples, args.metrics, args.first_step)
    last_json = [line for line in stdout.splitlines() if line.startswith("{")]
    if last_json:
        res["output"] = json.loads(last_json[-1])
    res["command"] = " ".join(args.command)
    with open(args.record, "a") as f:
        f.write(json.dumps(res) + "\n")
    with open(args.record + f".{args.name}.log", "w") as f:
        f.write(stdout + "\n--- stderr ---\n" + stderr)
    print(json.dumps(res))
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
