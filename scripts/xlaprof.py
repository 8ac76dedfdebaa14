#!/usr/bin/env python3
"""xlaprof.py: where a running XLA CPU program spends its time, kernel by kernel.

A BENCHMARK TOOL, not a test. `perf` alone sees the code XLA's CPU plugin compiles for a graph
as one anonymous "[JIT]" lump. XLA writes every kernel it compiles as an object file when
XLA_FLAGS has --xla_dump_to; this tool finds each kernel's code in the running process's
executable memory and counts perf's samples per kernel, per shared object, and per block of
generated code that is in no dumped object (other code generators inside the plugin).

    XLA_FLAGS=--xla_dump_to=/tmp/dump goaccel bench --work tiny --python none --rounds 1 --round_s 40 &
    # once it runs its steady steps (after the compile):
    sudo scripts/xlaprof.py --pid $(pgrep -f bench-worker) --dump /tmp/dump --seconds 10

Needs perf, objcopy and readelf (binutils), and the right to read the process's memory
(root, or the same user with ptrace allowed). The dump must come from the same run (the same
compiled kernels). Kernels that are found nowhere (not run, or compiled twice with different
code) are listed at the end.
"""
import argparse
import bisect
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    print(f"xlaprof: {msg}", file=sys.stderr)
    sys.exit(2)


def executable_anonymous_regions(pid):
    """The process's anonymous executable mappings and their bytes: [(start, bytes)]."""
    regions = []
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb")
    except OSError as e:
        fail(f"cannot read process {pid}'s memory: {e}")
    for line in maps:
        fields = line.split()
        path = fields[5] if len(fields) > 5 else ""
        if "x" not in fields[1] or not (path == "" or path.startswith("[anon")):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        try:
            mem.seek(start)
            regions.append((start, mem.read(end - start)))
        except OSError:
            pass  # unmapped since maps was read
    return regions


def kernels(dump, work):
    """The dumped kernels: [(name, code bytes, set of relocated byte offsets)]."""
    objs = sorted(glob.glob(os.path.join(dump, "*.o")))
    if not objs:
        fail(f"no object files in --dump {dump}: run the program with XLA_FLAGS=--xla_dump_to={dump}")
    out = []
    for o in objs:
        name = re.sub(r"^.*obj-file\.", "", os.path.basename(o))[:-2]
        name = re.sub(r"^__compute_module_|_kernel_module$", "", name)
        code = os.path.join(work, "code.bin")
        # XLA compiles kernels for the large code model: their code is in .ltext.
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.ltext", "--only-section=.text", o, code], check=True)
        text = open(code, "rb").read()
        relocated = set()
        for line in subprocess.run(["readelf", "-rW", o], capture_output=True, text=True, check=True).stdout.splitlines():
            m = re.match(r"^([0-9a-f]{16})\s", line)
            if m:
                off = int(m.group(1), 16)
                relocated.update(range(off, off + 8))
        out.append((name, text, relocated))
    return out


def locate(kernel_list, regions):
    """Where each kernel's code is loaded: sorted [(start, end, name)], and the names not found."""
    found, missing = [], []
    for name, text, relocated in kernel_list:
        if len(text) < 16:
            continue
        window = next((off for off in range(len(text) - 24) if not any(i in relocated for i in range(off, off + 24))), None)
        hits = []
        if window is not None:
            pattern = text[window:window + 24]
            for start, mem in regions:
                i = mem.find(pattern)
                while i >= 0:
                    base = i - window
                    if base >= 0 and base + len(text) <= len(mem) and all(
                            mem[base + j] == text[j] for j in range(len(text)) if j not in relocated):
                        hits.append(start + base)
                    i = mem.find(pattern, i + 1)
        if hits:
            found.extend((h, h + len(text), name) for h in hits)
        else:
            missing.append(name)
    found.sort()
    return found, missing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pid", type=int, required=True, help="the process running XLA (for goaccel bench: its bench-worker)")
    ap.add_argument("--dump", required=True, help="the folder given to --xla_dump_to")
    ap.add_argument("--seconds", type=float, default=10, help="how long perf samples (default 10)")
    ap.add_argument("--freq", type=int, default=1999, help="perf's sampling frequency (default 1999)")
    ap.add_argument("--top", type=int, default=25, help="kernels listed (default 25)")
    a = ap.parse_args()
    for tool in ("perf", "objcopy", "readelf"):
        if not shutil.which(tool):
            fail(f"needs {tool} on PATH")
    if a.seconds <= 0:
        fail(f"--seconds {a.seconds:g}: want a positive number of seconds")
    if a.freq <= 0:
        fail(f"--freq {a.freq}: want a positive sampling frequency")
    if a.top < 0:
        fail(f"--top {a.top}: want 0 or more kernels")
    if not os.path.isdir(a.dump):
        fail(f"--dump {a.dump}: no such folder")
    if not os.path.exists(f"/proc/{a.pid}"):
        fail(f"--pid {a.pid}: no such process")
    work = tempfile.mkdtemp(prefix="xlaprof-")
    try:
        dumped = kernels(a.dump, work)  # before sampling: an empty or wrong --dump fails at once
        regions = executable_anonymous_regions(a.pid)
        data = os.path.join(work, "perf.data")
        rec = subprocess.run(["perf", "record", "-F", str(a.freq), "-p", str(a.pid), "-o", data, "--", "sleep", str(a.seconds)],
                             capture_output=True, text=True)
        if rec.returncode != 0 or not os.path.exists(data):
            fail(f"perf record failed (exit status {rec.returncode}): {rec.stderr.strip()}")
        found, missing = locate(dumped, regions)
        samples = subprocess.run(["perf", "script", "-i", data, "-F", "ip,dso"], capture_output=True, text=True).stdout.splitlines()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    starts = [f[0] for f in found]
    region_starts = [r[0] for r in regions]
    per_kernel, per_dso, generated = collections.Counter(), collections.Counter(), collections.Counter()
    generated_pages = collections.defaultdict(collections.Counter)  # mapping -> 4 KiB page -> samples
    total = 0
    for line in samples:
        f = line.split(None, 1)
        if not f:
            continue
        total += 1
        ip = int(f[0], 16)
        k = bisect.bisect_right(starts, ip) - 1
        if k >= 0 and found[k][0] <= ip < found[k][1]:
            per_kernel[found[k][2]] += 1
            continue
        r = bisect.bisect_right(region_starts, ip) - 1
        if r >= 0 and ip < regions[r][0] + len(regions[r][1]):
            generated[(regions[r][0], len(regions[r][1]))] += 1
            generated_pages[regions[r][0]][(ip - regions[r][0]) >> 12] += 1
            continue
        dso = f[1].strip() if len(f) > 1 else "?"
        per_dso[os.path.basename(dso.strip("()"))] += 1
    if total == 0:
        fail("perf recorded no samples")
    pct = lambda n: f"{100 * n / total:6.2f}%"
    print(f"{total} samples over {a.seconds:g} s; {len(found)} kernels located, {len(missing)} not")
    print("\nby where the code is:")
    print(f"{pct(sum(per_kernel.values()))}  kernels XLA compiled for the graph (in --dump)")
    print(f"{pct(sum(generated.values()))}  generated code in no dumped object (other code generators)")
    for dso, n in per_dso.most_common():
        print(f"{pct(n)}  {dso}")
    print("\ngenerated code in no dumped object, by mapping:")
    for (start, size), n in generated.most_common(8):
        pages = generated_pages[start]
        top4 = sum(c for _, c in pages.most_common(4))
        print(f"{pct(n)}  {start:#x}, {size} bytes: samples on {len(pages)} pages of 4 KiB, {100 * top4 / n:.0f}% of them on the hottest 4")
    print(f"\nXLA's kernels (top {a.top}):")
    for name, n in per_kernel.most_common(a.top):
        print(f"{pct(n)}  {name}")
    if missing:
        print("\nnot located: " + ", ".join(missing))


if __name__ == "__main__":
    main()
