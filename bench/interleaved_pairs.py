#!/usr/bin/env python3
"""Times cargo-mcp-lint and ripgrep (the pre-filter's trigger words) in alternating pairs on the
MCP-heavy corpus, and prints the median of the per-pair ratios: on a shared, noisy machine both
commands of a pair see the same load. Run bench/lint-real-projects.sh once first (it fetches the
corpus and writes bench/work/triggers.txt). Times include Python's process start-up for both
commands, so the ratio is a little lower than hyperfine's for the same builds.

Usage: python3 bench/interleaved_pairs.py BINARY [PAIRS]   (PAIRS: default 60)
"""
import statistics
import subprocess
import sys
import time
from pathlib import Path

root = Path(__file__).resolve().parent.parent
binary = sys.argv[1]
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 60
corpus = root / "bench/work/corpus"
triggers = root / "bench/work/triggers.txt"
for needed in (corpus, triggers):
    if not needed.exists():
        sys.exit(f"error: {needed} is missing (bash bench/lint-real-projects.sh first)")
commands = {
    "cargo-mcp-lint": [binary, "--format", "concise", "--exit-zero", str(corpus)],
    "ripgrep": ["rg", "-c", "-F", "-g", "*.rs", "-g", "Cargo.toml", "-f", str(triggers), str(corpus)],
}


def timed(command):
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


for command in commands.values():
    for _ in range(3):
        timed(command)
times = {name: [] for name in commands}
ratios = []
for index in range(pairs):
    order = list(commands) if index % 2 == 0 else list(reversed(commands))
    pair = {name: timed(commands[name]) for name in order}
    for name, seconds in pair.items():
        times[name].append(seconds)
    ratios.append(pair["cargo-mcp-lint"] / pair["ripgrep"])
for name, values in times.items():
    print(f"{name}: median {statistics.median(values) * 1000:.1f} ms")
print(f"median of pair ratios {statistics.median(ratios):.2f} ({pairs} pairs)")
