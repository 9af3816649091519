#!/usr/bin/env bash
# Times cargo-mcp-lint against ripgrep (the TypeScript front-end's trigger words, the floor) on
# the TypeScript/JavaScript real-project corpus of tests/corpus/typescript/packages.txt, in one
# hyperfine run. See bench/lint-typescript.md.
#
# Usage: bash bench/lint-typescript.sh [BINARY...]   (other cargo-mcp-lint builds to time too)
# Environment: RUNS (default 30), WARMUP (default 3).
# Writes only under bench/work/ (git-ignored): corpus-typescript/, triggers.txt, compare.*, bin/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work
CORPUS=$WORK/corpus-typescript
RUNS=${RUNS:-30}
WARMUP=${WARMUP:-3}
source bench/lib.sh

bash tests/corpus/typescript/fetch.sh "$CORPUS"
lint_bench_setup

# The front-end's trigger words and the manifest's package name, read from the source.
{
    sed -n '/^const TRIGGERS/,/^];/p' lint/src/typescript/mod.rs | sed -n 's/^ *"\(.*\)",$/\1/p'
    echo "@modelcontextprotocol/sdk"
} | awk '!seen[$0]++' > "$WORK/triggers.txt"
[ -s "$WORK/triggers.txt" ] || { echo "error: no TRIGGERS in lint/src/typescript/mod.rs" >&2; exit 1; }

globs="-g *.ts -g *.tsx -g *.mts -g *.cts -g *.js -g *.mjs -g *.cjs -g !*.d.ts -g package.json"
files=$(rg --files $globs "$CORPUS" | wc -l)
echo "corpus: $(ls "$CORPUS" | wc -l) packages, $files files, $(rg --files $globs "$CORPUS" | xargs cat | wc -l) lines, $(du -sh "$CORPUS" | cut -f1)"
echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- lint rules 2>/dev/null || echo ' (lint/ or rules/ modified)')"
echo "findings: $("$LINT" --format concise --exit-zero "$CORPUS" | tail -1)"
GLOBS=$globs TREE=$CORPUS RUNS=$RUNS WARMUP=$WARMUP bash bench/compare.sh "$LINT" "$@"
