#!/usr/bin/env python3
"""Times cargo-mcp-lint and ripgrep (the pre-filter's trigger words) in alternating rounds on the
MCP-heavy corpus, and prints the median of the per-round ratios: on a shared, noisy machine the
commands of one round see the same load. Given several builds of the linter, each round runs
all of them and ripgrep (the order rotating from round to round), and each build is also
compared with the first. Run bench/lint-real-projects.sh once first (it fetches the corpus and
writes bench/work/triggers.txt). Times include Python's process start-up for every command, so
the ratio is a little lower than hyperfine's for the same builds.

Usage: python3 bench/interleaved_pairs.py BINARY [BINARY...] [ROUNDS]   (ROUNDS: default 60)
"""
import statistics
import subprocess
import sys
import time
from pathlib import Path

root = Path(__file__).resolve().parent.parent
args = sys.argv[1:]
rounds = int(args.pop()) if len(args) > 1 and args[-1].isdigit() else 60
if not args:
    sys.exit(__doc__)
corpus = root / "bench/work/corpus"
triggers = root / "bench/work/triggers.txt"
for needed in (corpus, triggers):
    if not needed.exists():
        sys.exit(f"error: {needed} is missing (bash bench/lint-real-projects.sh first)")
builds = [f"cargo-mcp-lint {binary}" if len(args) > 1 else "cargo-mcp-lint" for binary in args]
commands = {
    name: [binary, "--format", "concise", "--exit-zero", str(corpus)]
    for name, binary in zip(builds, args)
}
commands["ripgrep"] = [
    "rg", "-c", "-F", "-g", "*.rs", "-g", "Cargo.toml", "-f", str(triggers), str(corpus)
]


def timed(command):
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


for command in commands.values():
    for _ in range(3):
        timed(command)
names = list(commands)
times = {name: [] for name in names}
to_ripgrep = {name: [] for name in builds}
to_first = {name: [] for name in builds}
for index in range(rounds):
    shift = index % len(names)
    run = {name: timed(commands[name]) for name in names[shift:] + names[:shift]}
    for name, seconds in run.items():
        times[name].append(seconds)
    for name in builds:
        to_ripgrep[name].append(run[name] / run["ripgrep"])
        to_first[name].append(run[name] / run[builds[0]])
for name, values in times.items():
    print(f"{name}: median {statistics.median(values) * 1000:.1f} ms")
for name in builds:
    print(f"{name}: median of round ratios to ripgrep {statistics.median(to_ripgrep[name]):.2f}"
          f" ({rounds} rounds)")
for name in builds[1:]:
    print(f"{name}: median of round ratios to {builds[0]} {statistics.median(to_first[name]):.3f}")
