#!/usr/bin/env bash
# Benchmarks cargo-mcp-lint against ast-grep (equivalent rules, bench/ast-grep/) and ripgrep (the
# pre-filter's trigger words, the floor) on one large Rust tree: the sources of every crates.io
# package in Cargo.lock, copied to bench/work/tree. See bench/README.md.
#
# Usage: bash bench/run.sh [--ablation | --quick]
#   --ablation  also time ast-grep without its macro-body rules (the `# macro-body:` blocks);
#   --quick     time only the linter and ripgrep (seconds instead of minutes: the floor ratio,
#               e.g. in a quiet moment of a shared machine), into results-quick.{md,json}.
# Environment: RUNS (default 10), WARMUP (default 2), AST_GREP_VERSION (default 0.51.1).
#
# Writes only under bench/work/ (git-ignored): tools, tree, results.{md,json}, run.log.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work
TREE=$WORK/tree
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
AST_GREP_VERSION=${AST_GREP_VERSION:-0.51.1}
ABLATION=0
QUICK=0
for arg in "$@"; do
    case $arg in
        --ablation) ABLATION=1 ;;
        --quick) QUICK=1 ;;
        *) echo "usage: bash bench/run.sh [--ablation | --quick]" >&2; exit 2 ;;
    esac
done
mkdir -p "$WORK"
exec > >(tee "$WORK/run.log") 2>&1

section() { printf '\n== %s\n' "$*"; }

# ----- tools ------------------------------------------------------------------------------------
section tools
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
apt_install() {
    $SUDO apt-get install -y "$@" || { $SUDO apt-get update && $SUDO apt-get install -y "$@"; }
}
missing=()
command -v rg >/dev/null || missing+=(ripgrep)
command -v hyperfine >/dev/null || missing+=(hyperfine)
command -v npm >/dev/null || missing+=(npm)
command -v python3 >/dev/null || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi

# ast-grep from npm into bench/work/npm. The package's binaries come as optional platform
# packages; `sg` on the PATH of this machine is an unrelated tool, so never use it.
find_sg() {
    local candidate
    for candidate in "$WORK"/npm/node_modules/.bin/ast-grep "$WORK"/npm/node_modules/@ast-grep/cli-*/ast-grep; do
        if [ -x "$candidate" ] && "$candidate" --version 2>/dev/null | grep -q '^ast-grep '; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}
if ! SG=$(find_sg); then
    npm install --prefix "$WORK/npm" --no-audit --no-fund "@ast-grep/cli@$AST_GREP_VERSION"
    SG=$(find_sg) || { echo "error: ast-grep from npm does not run" >&2; exit 1; }
fi
echo "ripgrep:   $(rg --version | head -1)"
echo "hyperfine: $(hyperfine --version)"
echo "ast-grep:  $("$SG" --version) ($SG)"
echo "rustc:     $(rustc --version)"

# ----- the linter -------------------------------------------------------------------------------
section "build cargo-mcp-lint (release)"
cargo build --release -p cargo-mcp-lint
# Benchmark a copy: other builds in this checkout must not swap the binary mid-run.
mkdir -p "$WORK/bin"
cp "${CARGO_TARGET_DIR:-target}/release/cargo-mcp-lint" "$WORK/bin/cargo-mcp-lint"
LINT=$WORK/bin/cargo-mcp-lint
echo "commit:    $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- lint rules Cargo.lock 2>/dev/null || echo ' (lint/, rules/ or Cargo.lock modified)')"

# ----- the tree ---------------------------------------------------------------------------------
section "tree: the crates.io packages of Cargo.lock"
cargo fetch --locked
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
awk '
    function flush() { if (name != "" && source ~ /^"(registry|sparse)\+/) print name "-" version }
    /^\[\[package\]\]/ { flush(); name = version = source = "" }
    /^name = /    { name = $3;    gsub(/"/, "", name) }
    /^version = / { version = $3; gsub(/"/, "", version) }
    /^source = /  { source = $3 }
    END { flush() }
' Cargo.lock | sort > "$WORK/tree.crates.new"
if [ -d "$TREE" ] && cmp -s "$WORK/tree.crates.new" "$WORK/tree.crates"; then
    echo "bench/work/tree is up to date ($(wc -l < "$WORK/tree.crates") crates)"
else
    rm -rf "$TREE" "$WORK/tree.crates"
    mkdir -p "$TREE"
    while read -r crate; do
        src=
        for dir in "$CARGO_HOME"/registry/src/*/"$crate"; do
            if [ -d "$dir" ]; then src=$dir; break; fi
        done
        [ -n "$src" ] || { echo "error: $crate is not in $CARGO_HOME/registry/src" >&2; exit 1; }
        cp -r "$src" "$TREE/"
    done < "$WORK/tree.crates.new"
    echo "copied $(wc -l < "$WORK/tree.crates.new") crates into bench/work/tree"
fi
mv "$WORK/tree.crates.new" "$WORK/tree.crates"
TREE_FILES=$(find "$TREE" -type f | wc -l)
TREE_BYTES=$(du -sb "$TREE" | cut -f1)
RS_FILES=$(find "$TREE" -type f -name '*.rs' | wc -l)
RS_LINES=$(find "$TREE" -type f -name '*.rs' -print0 | xargs -0 cat | wc -l)
RS_BYTES=$(find "$TREE" -type f -name '*.rs' -print0 | xargs -0 cat | wc -c)
MANIFESTS=$(find "$TREE" -type f -name Cargo.toml | wc -l)
echo "crates:      $(wc -l < "$WORK/tree.crates") (list: bench/work/tree.crates, sha256 $(sha256sum "$WORK/tree.crates" | cut -c1-12))"
echo "files:       $TREE_FILES ($TREE_BYTES bytes)"
echo ".rs files:   $RS_FILES, $RS_LINES lines, $RS_BYTES bytes"
echo "Cargo.toml:  $MANIFESTS"

# ----- the commands -----------------------------------------------------------------------------
# ripgrep searches the same files as the linter (.rs and Cargo.toml) for the pre-filter's words,
# read from lint/src/prefilter.rs so that the floor follows the linter: the union of its lists
# (TRIGGERS for crates that depend on rmcp, STANDALONE_TRIGGERS for the others).
sed -n '/pub const [A-Z_]*TRIGGERS/,/^];/p' lint/src/prefilter.rs |
    sed -n 's/^ *"\(.*\)",$/\1/p' | sed 's/\\"/"/g' | awk '!seen[$0]++' > "$WORK/triggers.txt"
[ -s "$WORK/triggers.txt" ] || { echo "error: no TRIGGERS in lint/src/prefilter.rs" >&2; exit 1; }

CMD_LINT="$LINT --format concise --exit-zero $TREE > /dev/null"
CMD_LINT_NOPRE="$LINT --format concise --exit-zero --no-prefilter $TREE > /dev/null"
# ast-grep exits 1 when a rule of severity error matches; anything above 1 is a failure.
CMD_SG="$SG scan -c bench/ast-grep/sgconfig.yml $TREE > /dev/null; [ \$? -le 1 ]"
CMD_RG="rg -c -F -g '*.rs' -g Cargo.toml -f $WORK/triggers.txt $TREE > /dev/null"
section commands
echo "linter:         $CMD_LINT"
echo "no pre-filter:  $CMD_LINT_NOPRE"
echo "ast-grep:       $CMD_SG"
echo "ripgrep:        $CMD_RG"
echo "trigger words:  $(tr '\n' ' ' < "$WORK/triggers.txt")"
extra=()
if [ "$ABLATION" = 1 ]; then
    rm -rf "$WORK/ast-grep-nomacro"
    mkdir -p "$WORK/ast-grep-nomacro/rules"
    cp bench/ast-grep/sgconfig.yml "$WORK/ast-grep-nomacro/"
    for rule in bench/ast-grep/rules/*.yml; do
        sed '/# macro-body: begin/,/# macro-body: end/d' "$rule" > "$WORK/ast-grep-nomacro/rules/${rule##*/}"
    done
    CMD_SG_NOMACRO="$SG scan -c $WORK/ast-grep-nomacro/sgconfig.yml $TREE > /dev/null; [ \$? -le 1 ]"
    echo "ast-grep, no macro-body rules: $CMD_SG_NOMACRO"
    extra=(-n "ast-grep (no macro-body rules)" "$CMD_SG_NOMACRO")
fi

# ----- findings (not timed): do the tools do comparable work? -----------------------------------
if [ "$QUICK" = 0 ]; then
section "findings (separate, untimed runs)"
"$LINT" --format json --exit-zero "$TREE" > "$WORK/findings-lint.json"
"$LINT" --format json --exit-zero --no-prefilter "$TREE" > "$WORK/findings-lint-noprefilter.json"
{ "$SG" scan -c bench/ast-grep/sgconfig.yml --json=stream "$TREE" || [ $? -le 1 ]; } > "$WORK/findings-ast-grep.jsonl"
"$SG" scan -c bench/ast-grep/sgconfig.yml --inspect summary "$TREE" 2>&1 >/dev/null |
    sed -n 's/.*scannedFileCount=\([0-9]*\).*/\1/p' > "$WORK/ast-grep-files.txt" || true
rg -c -F -g '*.rs' -g Cargo.toml -f "$WORK/triggers.txt" "$TREE" > "$WORK/findings-rg.txt"
RG_FILES_SEARCHED=$(rg --files -g '*.rs' -g Cargo.toml "$TREE" | wc -l)
python3 - "$WORK" "$RG_FILES_SEARCHED" "$RS_FILES" <<'EOF'
import collections, json, sys
work, rg_searched, rs_files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lint = json.load(open(f"{work}/findings-lint.json"))
nopre = json.load(open(f"{work}/findings-lint-noprefilter.json"))
sg = [json.loads(line) for line in open(f"{work}/findings-ast-grep.jsonl") if line.strip()]
rg = [line.rsplit(":", 1) for line in open(f"{work}/findings-rg.txt") if line.strip()]
sg_files = open(f"{work}/ast-grep-files.txt").read().strip() or "?"
s = lint["summary"]
parsed = s["files_scanned"] - s["files_skipped_by_prefilter"]
print(f"cargo-mcp-lint: {len(lint['diagnostics'])} findings; {s['files_scanned']} files "
      f"({rs_files} .rs + Cargo.toml), {s['files_skipped_by_prefilter']} skipped by the pre-filter, "
      f"{parsed} parsed (syn or toml)")
print("   ", dict(collections.Counter(d["name"] for d in lint["diagnostics"]).most_common()))
print(f"cargo-mcp-lint --no-prefilter: {len(nopre['diagnostics'])} findings")
key = lambda d: (d["path"], d["line"], d["column"], d["name"])
with_pre = {key(d) for d in lint["diagnostics"]}
without = {key(d) for d in nopre["diagnostics"]}
for d in nopre["diagnostics"]:
    if key(d) not in with_pre:
        tag = "only without the pre-filter"
        print(f"    {tag}: {d['path']}:{d['line']}:{d['column']} {d['name']}: {d['message'][:110]}")
for k in sorted(with_pre - without):
    print(f"    only with the pre-filter (unexpected): {k}")
print(f"ast-grep:       {len(sg)} findings in {sg_files} files")
print("   ", dict(collections.Counter(r["ruleId"] for r in sg).most_common()))
def covered(d):
    return any(r["file"] == d["path"] and r["ruleId"] == d["name"]
               and r["range"]["start"]["line"] + 1 <= d["line"] <= r["range"]["end"]["line"] + 1
               for r in sg)
rust = [d for d in lint["diagnostics"] if d["path"].endswith(".rs")]
hits = sum(covered(d) for d in rust)
print(f"    linter findings in .rs files that an ast-grep finding of the same rule covers: {hits}/{len(rust)}")
print(f"ripgrep:        {sum(int(c) for _, c in rg)} matching lines in {len(rg)} of {rg_searched} files")
EOF
fi

# ----- timing -----------------------------------------------------------------------------------
section "timing: hyperfine --warmup $WARMUP --runs $RUNS"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
RESULTS=$WORK/results
if [ "$QUICK" = 1 ]; then
    RESULTS=$WORK/results-quick
    hyperfine --warmup "$WARMUP" --runs "$RUNS" \
        --export-markdown "$RESULTS.md" --export-json "$RESULTS.json" \
        -n "cargo-mcp-lint" "$CMD_LINT" \
        -n "ripgrep (trigger words)" "$CMD_RG"
else
    hyperfine --warmup "$WARMUP" --runs "$RUNS" \
        --export-markdown "$RESULTS.md" --export-json "$RESULTS.json" \
        -n "cargo-mcp-lint" "$CMD_LINT" \
        -n "cargo-mcp-lint --no-prefilter" "$CMD_LINT_NOPRE" \
        -n "ast-grep scan" "$CMD_SG" \
        -n "ripgrep (trigger words)" "$CMD_RG" \
        "${extra[@]}"
fi

section results
python3 - "$RESULTS.json" <<'EOF'
import json, math, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
for name, r in results.items():
    print(f"{name:32s} {1000*r['mean']:9.1f} ms ± {1000*r['stddev']:6.1f} ms  "
          f"(user {1000*r['user']:.0f} ms, system {1000*r['system']:.0f} ms)")
def ratio(a, b):
    ra, rb = results[a], results[b]
    value = ra["mean"] / rb["mean"]
    error = value * math.hypot(ra["stddev"] / ra["mean"], rb["stddev"] / rb["mean"])
    return value, error
lint, sg, rg, nopre = "cargo-mcp-lint", "ast-grep scan", "ripgrep (trigger words)", "cargo-mcp-lint --no-prefilter"
print()
if sg in results:
    v, e = ratio(sg, lint)
    print(f"ast-grep / cargo-mcp-lint = {v:.2f} ± {e:.2f}   target >= 2   {'MET' if v >= 2 else 'MISSED'}")
v, e = ratio(lint, rg)
print(f"cargo-mcp-lint / ripgrep  = {v:.2f} ± {e:.2f}   target <= 3   {'MET' if v <= 3 else 'MISSED'}")
if nopre in results:
    v, e = ratio(nopre, lint)
    print(f"no pre-filter / pre-filter = {v:.2f} ± {e:.2f}   (what the pre-filter buys)")
if "ast-grep (no macro-body rules)" in results:
    v, e = ratio("ast-grep (no macro-body rules)", lint)
    print(f"ast-grep without macro-body rules / cargo-mcp-lint = {v:.2f} ± {e:.2f}")
# CPU time (user + system) is less sensitive than wall time to other load on a shared machine.
cpu = lambda name: results[name]["user"] + results[name]["system"]
print("\nCPU time (user + system):"
      + (f" ast-grep / cargo-mcp-lint = {cpu(sg) / cpu(lint):.2f}," if sg in results else "")
      + f" cargo-mcp-lint / ripgrep = {cpu(lint) / cpu(rg):.2f}")
EOF

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

section machine
echo "nproc: $(nproc)"
echo "cpu:   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "kernel: $(uname -r)"
free -g
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "results: $RESULTS.md, $RESULTS.json, log: $WORK/run.log"
