#!/usr/bin/env bash
# Times cargo-mcp-lint against ripgrep (the pre-filter's trigger words, the floor) on the
# MCP-heavy real-project corpus of tests/corpus/crates.txt, in one hyperfine run. The other
# corpus (every crates.io package of Cargo.lock, mostly unrelated to MCP) is bench/run.sh's.
# See bench/lint-real-projects.md.
#
# Usage: bash bench/lint-real-projects.sh [BINARY...]
#   BINARY: other cargo-mcp-lint builds to time in the same run (e.g. one built at main).
# Environment: RUNS (default 30), WARMUP (default 3).
# Times with bench/compare.sh (TREE=bench/work/corpus): hyperfine -N, ratios to ripgrep.
# Writes only under bench/work/ (git-ignored): corpus/, compare.{json,md}, bin/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work
CORPUS=$WORK/corpus
RUNS=${RUNS:-30}
WARMUP=${WARMUP:-3}
source bench/lib.sh

bash tests/corpus/fetch.sh "$CORPUS"
lint_bench_setup

# The union of the pre-filter's lists, read from its source so that the floor follows the linter.
sed -n '/pub const [A-Z_]*TRIGGERS/,/^];/p' lint/src/prefilter.rs |
    sed -n 's/^ *"\(.*\)",$/\1/p' | sed 's/\\"/"/g' | awk '!seen[$0]++' > "$WORK/triggers.txt"
[ -s "$WORK/triggers.txt" ] || { echo "error: no TRIGGERS in lint/src/prefilter.rs" >&2; exit 1; }

rs_files=$(find "$CORPUS" -name '*.rs' | wc -l)
mcp_files=$(grep -ril --include='*.rs' mcp "$CORPUS" | wc -l)
echo "corpus: $(ls "$CORPUS" | wc -l) crates, $rs_files .rs files ($mcp_files name MCP), $(find "$CORPUS" -name '*.rs' -exec cat {} + | wc -l) lines"
echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- lint rules 2>/dev/null || echo ' (lint/ or rules/ modified)')"
echo "findings: $("$LINT" --format concise --exit-zero "$CORPUS" | tail -1)"
TREE=$CORPUS RUNS=$RUNS WARMUP=$WARMUP bash bench/compare.sh "$LINT" "$@"
