#!/usr/bin/env bash
# Times several cargo-mcp-lint binaries and ripgrep side by side in one hyperfine run (-N, no
# shell), and prints each one's wall and CPU time against ripgrep's. For comparing builds of the
# linter (e.g. before/after a change) under the same machine load. Needs bench/work/tree and
# bench/work/triggers.txt (bash bench/run.sh --quick prepares both); TREE=DIR times another tree
# (bench/lint-real-projects.sh uses it for the real-project corpus); GLOBS='-g *.ts ...' sets
# ripgrep's file globs (default: the Rust sources and manifests).
#
# Usage: bash bench/compare.sh BINARY...   (paths to cargo-mcp-lint binaries)
# Environment: RUNS (default 20), WARMUP (default 2), THREADS=1 to also sample each command with
# `perf record` (3 runs) and print how its CPU samples split over its threads: the busiest
# thread's share bounds the parallel speed-up, and the busiest thread's CPU time bounds the wall
# time from below, whatever the other load on the machine.
# Writes bench/work/compare.{json,md} (and compare-perf.* with THREADS=1).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work
TREE=${TREE:-$WORK/tree}
RUNS=${RUNS:-20}
WARMUP=${WARMUP:-2}
GLOBS=${GLOBS:-"-g *.rs -g Cargo.toml"}
[ $# -gt 0 ] || { echo "usage: bash bench/compare.sh BINARY..." >&2; exit 2; }
for needed in "$TREE" "$WORK/triggers.txt" "$@"; do
    [ -e "$needed" ] || { echo "error: $needed is missing (bash bench/run.sh --quick first)" >&2; exit 1; }
done
args=()
for binary in "$@"; do
    args+=(-n "$binary" "$binary --format concise --exit-zero $TREE")
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -N --warmup "$WARMUP" --runs "$RUNS" \
    --export-json "$WORK/compare.json" --export-markdown "$WORK/compare.md" \
    "${args[@]}" \
    -n "ripgrep (trigger words)" "rg -c -F $GLOBS -f $WORK/triggers.txt $TREE"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$WORK/compare.json" <<'PY'
import json, math, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
rg = results["ripgrep (trigger words)"]
cpu = lambda r: r["user"] + r["system"]
for name, r in results.items():
    ratio = r["mean"] / rg["mean"]
    error = ratio * math.hypot(r["stddev"] / r["mean"], rg["stddev"] / rg["mean"])
    print(f"{name:40s} {1000*r['mean']:7.1f} ± {1000*r['stddev']:5.1f} ms (min {1000*r['min']:6.1f})"
          f"  CPU {1000*cpu(r):5.0f} ms  cores {cpu(r)/r['mean']:.2f}"
          f"  / ripgrep: wall {ratio:.2f} ± {error:.2f}, CPU {cpu(r)/cpu(rg):.2f}")
PY

if [ "${THREADS:-0}" = 1 ] && command -v perf >/dev/null; then
    echo
    echo "CPU samples per thread (perf record -F 4000, 3 runs each; busiest thread first):"
    run_perf() { # run_perf NAME COMMAND...
        local name=$1; shift
        for run in 1 2 3; do
            perf record -q -F 4000 -o "$WORK/compare-perf.data" "$@" > /dev/null 2>&1
            perf script -i "$WORK/compare-perf.data" -F tid 2>/dev/null |
                sort | uniq -c | sort -rn | awk -v name="$name" -v run="$run" '
                    { total += $1; counts[NR] = $1 }
                    END {
                        line = sprintf("%-40s run %d: %5d samples, busiest thread %5d (%.0f %%), threads:", name, run, total, counts[1], 100 * counts[1] / total)
                        for (i = 1; i <= NR && i <= 6; i++) line = line " " counts[i]
                        print line
                    }'
        done
    }
    for binary in "$@"; do
        run_perf "$binary" "$binary" --format concise --exit-zero "$TREE"
    done
    run_perf "ripgrep (trigger words)" rg -c -F -g '*.rs' -g Cargo.toml -f "$WORK/triggers.txt" "$TREE"
fi
