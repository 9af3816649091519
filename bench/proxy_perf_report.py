"""Per-call CPU of each front by category and by function, from bench/proxy_perf_profile.sh's
`perf record -e cpu-clock` samples (OUT/LABEL.REP.data) and checked calls (OUT/calls.txt, one
line per front and repetition): the samples of all repetitions over all their calls.

Usage: proxy_perf_report.py OUT FREQ TOP LABEL...

Each sample is FREQ⁻¹ s of CPU in the function it landed in (self time: inlined code counts in
the function it was inlined into). A function goes to the first category whose pattern matches
its name, in the order below."""

import collections
import re
import subprocess
import sys

CATEGORIES = [
    ("kernel (system calls, TCP, scheduling)", lambda dso, kind, sym: kind == "k"),
    ("tracing", lambda dso, kind, sym: re.search(r"tracing|sharded_slab", sym)),
    ("serde_json", lambda dso, kind, sym: "serde" in sym),
    ("hyper, http, httparse", lambda dso, kind, sym: re.search(r"hyper::|^<?http::|httparse|<http::", sym)),
    ("tokio", lambda dso, kind, sym: "tokio" in sym),
    ("allocator (jemalloc)", lambda dso, kind, sym: re.search(r"rjem|malloc|free", sym)),
    ("memcpy, memcmp", lambda dso, kind, sym: sym.startswith("__mem")),
    ("clock reads", lambda dso, kind, sym: "vdso" in dso or re.search(r"clock_gettime|Timespec|Instant", sym)),
    ("bytes", lambda dso, kind, sym: "bytes::" in sym),
    ("the proxy's own code", lambda dso, kind, sym: "mcp_mrtr_proxy" in sym),
    ("libc, libm (system call wrappers, pow)", lambda dso, kind, sym: re.search(r"libc|libm", dso)),
    ("other (core, futures glue)", lambda dso, kind, sym: True),
]


def samples(path):
    """(samples, dso, kind, symbol) rows of `perf report`, self time."""
    report = subprocess.run(
        ["perf", "report", "-i", path, "--no-children", "--sort", "dso,sym", "-F", "sample,dso,sym", "--stdio"],
        capture_output=True, text=True, check=True).stdout
    rows = []
    for line in report.splitlines():
        match = re.match(r"\s*(\d+)\s+(\S+)\s+\[(.)\]\s+(.*)", line)
        if match and not line.startswith("#"):
            rows.append((int(match[1]), match[2], match[3], re.sub(r"::h[0-9a-f]{16}$", "", match[4].strip())))
    return rows


def main():
    out, freq, top, labels = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    calls = collections.Counter()
    reps = collections.defaultdict(list)
    for line in open(f"{out}/calls.txt"):
        label, rep, count = line.split()
        calls[label] += int(count)
        reps[label].append(rep)
    per_call = {}  # label -> category -> µs
    functions = {}  # label -> [(µs, symbol)]
    for label in labels:
        scale = 1e6 / freq / calls[label]
        by_category = collections.Counter()
        by_function = collections.Counter()
        rows = [row for rep in reps[label] for row in samples(f"{out}/{label}.{rep}.data")]
        for count, dso, kind, sym in rows:
            name = next(name for name, test in CATEGORIES if test(dso, kind, sym))
            by_category[name] += count * scale
            by_function[f"[{kind}] {sym}"] += count * scale
        per_call[label] = by_category
        functions[label] = by_function.most_common(top)
    print(f"CPU per checked call (µs), by category ({', '.join(f'{label}: {calls[label]} calls' for label in labels)}):\n")
    print("| category | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name, _ in CATEGORIES:
        print(f"| {name} | " + " | ".join(f"{per_call[label][name]:.2f}" for label in labels) + " |")
    print("| **total** | " + " | ".join(f"**{sum(per_call[label].values()):.2f}**" for label in labels) + " |")
    for label in labels:
        print(f"\n{label}: the {top} functions with the most CPU per call (µs, self time)\n")
        for sym, micros in functions[label]:
            print(f"    {micros:6.3f}  {sym[:150]}")


if __name__ == "__main__":
    main()
