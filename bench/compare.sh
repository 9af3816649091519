#!/usr/bin/env bash
# Times several cargo-mcp-lint binaries and ripgrep side by side in one hyperfine run (-N, no
# shell), and prints each one's wall and CPU time against ripgrep's. For comparing builds of the
# linter (e.g. before/after a change) under the same machine load. Needs bench/work/tree and
# bench/work/triggers.txt (bash bench/run.sh --quick prepares both).
#
# Usage: bash bench/compare.sh BINARY...   (paths to cargo-mcp-lint binaries)
# Environment: RUNS (default 20), WARMUP (default 2). Writes bench/work/compare.{json,md}.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work
RUNS=${RUNS:-20}
WARMUP=${WARMUP:-2}
[ $# -gt 0 ] || { echo "usage: bash bench/compare.sh BINARY..." >&2; exit 2; }
for needed in "$WORK/tree" "$WORK/triggers.txt" "$@"; do
    [ -e "$needed" ] || { echo "error: $needed is missing (bash bench/run.sh --quick first)" >&2; exit 1; }
done
args=()
for binary in "$@"; do
    args+=(-n "$binary" "$binary --format concise --exit-zero $WORK/tree")
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -N --warmup "$WARMUP" --runs "$RUNS" \
    --export-json "$WORK/compare.json" --export-markdown "$WORK/compare.md" \
    "${args[@]}" \
    -n "ripgrep (trigger words)" "rg -c -F -g *.rs -g Cargo.toml -f $WORK/triggers.txt $WORK/tree"
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
