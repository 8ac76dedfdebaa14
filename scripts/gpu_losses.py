#!/usr/bin/env python3
"""Reference losses for scripts/gpu_check.sh: record them on the CPU, compare a run with them.

The losses come from the quickstart's output (its "epoch N  loss X" lines) or from a
bert_classify run directory's metrics.jsonl (its training records, one per update with
--logging_steps 1). scripts/gpu_references.json holds them with the command that made them.

  gpu_losses.py record NAME SOURCE --command "..."   # NAME: quickstart or bert_classify
  gpu_losses.py compare NAME SOURCE --label tf32-off [--tolerance 2e-5] [--jsonl FILE]
  gpu_losses.py sync TIMELINE_DIR --label ... [--jsonl FILE]  # the all-reduces' share of the steps

compare prints one JSON line: the run's losses, the largest relative difference from the
reference over the updates both have (a dry run of 1 update compares the first), and, with
--tolerance, whether it passes (exit status 1 when not). Standard library only: the GPU
machine runs it with its own Python.
"""
import argparse
import glob
import json
import os
import re
import sys

REFERENCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_references.json")


def losses_of(source):
    """The losses of a quickstart output file or a bert_classify run directory, in order."""
    if os.path.isdir(source):
        losses = []
        with open(os.path.join(source, "metrics.jsonl")) as f:
            for line in f:
                rec = json.loads(line)
                if rec.get("kind") == "train":
                    losses.append(float(rec["loss"]))
        return losses
    with open(source) as f:
        return [float(m.group(1)) for m in re.finditer(r"^epoch \d+  loss (\S+)", f.read(), re.M)]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def record(args):
    refs = load(args.references)
    losses = losses_of(args.source)
    if not losses:
        sys.exit(f"gpu_losses.py: no losses in {args.source}")
    refs[args.name] = {"command": args.command, "losses": losses}
    with open(args.references, "w") as f:
        json.dump(refs, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"gpu_losses.py: {len(losses)} {args.name} losses recorded in {args.references}")


def compare(args):
    refs = load(args.references)
    if args.name not in refs:
        sys.exit(f"gpu_losses.py: {args.references} has no {args.name!r} reference")
    ref = refs[args.name]["losses"]
    got = losses_of(args.source)
    n = min(len(got), len(ref))
    worst, at = 0.0, None
    for i in range(n):
        d = abs(got[i] - ref[i]) / max(abs(ref[i]), 1e-12)
        if d > worst or at is None:
            worst, at = d, i + 1
    res = {"name": args.name, "label": args.label, "compared": n, "of": len(ref),
           "max_rel_diff": worst, "at": at, "losses": got}
    ok = n > 0
    if args.tolerance is not None:
        ok = ok and worst <= args.tolerance
        res.update(tolerance=args.tolerance, passed=ok)
    emit(args, res, "%s %s: max rel diff %.3g over %d of %d losses%s" % (
        args.name, args.label, worst, n, len(ref), {True: ", PASS", False: ", FAIL"}.get(res.get("passed"), "")))
    return 0 if ok else 1


def emit(args, res, line):
    """Appends res to --jsonl's file (else prints it) and prints line for people."""
    if args.jsonl:
        with open(args.jsonl, "a") as f:
            f.write(json.dumps(res) + "\n")
        print(line)
    else:
        print(json.dumps(res))


def sync(args):
    """Sums, over every rank's Chrome trace, the time of the steps after the first and of the
    collectives inside them (the buckets' spans, nested in their all-reduce, are not counted
    twice)."""
    step = coll = 0.0
    for path in sorted(glob.glob(os.path.join(args.dir, "rank_*.json"))):
        with open(path) as f:
            trace = json.load(f)
        events = [e for e in (trace.get("traceEvents", []) if isinstance(trace, dict) else trace) if e.get("ph") == "X"]
        steps = sorted((e["ts"], e["ts"] + e.get("dur", 0)) for e in events if e.get("cat") == "step")
        if len(steps) > 1:
            steps = steps[1:]  # the first step compiles: it would hide the all-reduces' share
        step += sum(b - a for a, b in steps)
        for e in events:
            if e.get("cat") == "collective" and e.get("name") != "all-reduce buckets" and \
                    any(a <= e["ts"] <= b for a, b in steps):
                coll += e.get("dur", 0)
    share = coll / step if step else None
    res = {"label": args.label, "step_s": step / 1e6, "collective_s": coll / 1e6, "sync_share": share}
    emit(args, res, "%s: all-reduces %.1f%% of the steps (%.2f of %.2f s)" % (
        args.label, 100 * (share or 0), coll / 1e6, step / 1e6))
    return 0 if step else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--references", default=REFERENCES)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("name")
    r.add_argument("source")
    r.add_argument("--command", required=True)
    c = sub.add_parser("compare")
    c.add_argument("name")
    c.add_argument("source")
    c.add_argument("--label", required=True)
    c.add_argument("--tolerance", type=float)
    c.add_argument("--jsonl", help="append the JSON line to this file and print a line for people")
    s = sub.add_parser("sync")
    s.add_argument("dir")
    s.add_argument("--label", required=True)
    s.add_argument("--jsonl", help="append the JSON line to this file and print a line for people")
    args = p.parse_args()
    sys.exit({"record": record, "compare": compare, "sync": sync}[args.cmd](args) or 0)


if __name__ == "__main__":
    main()
