#!/usr/bin/env python3
"""Where a running XLA CPU program spends its time, by fusion name.

XLA's CPU plugin compiles each fusion of a step into machine code in anonymous memory, which
`perf` cannot name. Run the program with XLA_FLAGS="--xla_dump_to=DUMP --xla_dump_hlo_as_text"
(XLA then also writes each fusion's object file, DUMP/*.obj-file.*.o), and while it runs:

    scripts/fusion_profile.py --pid PID --dump DUMP [--seconds 15]

This records `perf record -F 999 -p PID`, finds each object file's functions in the process's
executable anonymous memory (by a run of their code bytes that occurs once), and prints the
share of all samples per shared object and per fusion. The fusions' HLO is in
DUMP/*.cpu_after_optimizations.txt. Used for docs/performance.md ("MiniLM-shaped bf16 steps").
"""
import argparse
import bisect
import collections
import glob
import os
import subprocess
import tempfile


def executable_anonymous(pid):
    """The process's executable mappings without a file: (start, bytes)."""
    regions = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem:
        for line in maps:
            fields = line.split()
            if "x" not in fields[1] or (len(fields) >= 6 and fields[5].startswith(("/", "["))):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                regions.append((start, mem.read(end - start)))
            except OSError:
                pass
    return regions


def fusion_functions(dump, regions):
    """(start, end, name) of each dumped function found once in regions."""
    found = []
    for obj in glob.glob(os.path.join(dump, "*.o")):
        syms = subprocess.run(["nm", "-S", "--defined-only", obj], capture_output=True, text=True).stdout
        code = subprocess.run(["objcopy", "-O", "binary", "--only-section=.ltext", obj, "/dev/stdout"],
                              capture_output=True).stdout
        for line in syms.splitlines():
            f = line.split()
            if len(f) != 4 or f[2] not in "tT":
                continue
            off, size, name = int(f[0], 16), int(f[1], 16), f[3]
            body = code[off:off + size]
            # A run of 24 bytes that occurs once; the code before it may hold relocated constants.
            for k in range(0, max(0, min(len(body) - 24, 480)), 24):
                key = body[k:k + 24]
                hits = [(start + i) for start, mem in regions for i in [mem.find(key)]
                        if i >= 0 and mem.find(key, i + 1) < 0]
                if len(hits) == 1:
                    found.append((hits[0] - k, hits[0] - k + size, name))
                    break
    return sorted(found)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pid", type=int, required=True, help="the XLA program's process id")
    ap.add_argument("--dump", required=True, help="its --xla_dump_to folder")
    ap.add_argument("--seconds", type=float, default=15, help="how long to record")
    ap.add_argument("--top", type=int, default=30, help="how many fusions to print")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "record", "-q", "-F", "999", "-p", str(args.pid), "-o", data,
                        "--", "sleep", str(args.seconds)], check=True)
        funcs = fusion_functions(args.dump, executable_anonymous(args.pid))
        script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,dso"], capture_output=True, text=True).stdout
    starts = [f[0] for f in funcs]
    by_dso, by_fusion = collections.Counter(), collections.Counter()
    total = 0
    for line in script.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        total += 1
        dso = os.path.basename(fields[1].strip("()"))
        by_dso[dso] += 1
        if dso.startswith("perf-") or dso == "[unknown]":
            ip = int(fields[0], 16)
            i = bisect.bisect_right(starts, ip) - 1
            by_fusion[funcs[i][2] if i >= 0 and ip < funcs[i][1] else "(compiled code not matched)"] += 1
    print(f"{total} samples; {len(funcs)} compiled functions found in memory")
    for name, n in by_dso.most_common(8):
        print(f"{100 * n / total:6.2f}%  {name}")
    print("compiled code by fusion:")
    for name, n in by_fusion.most_common(args.top):
        print(f"{100 * n / total:6.2f}%  {name}")


if __name__ == "__main__":
    main()
