#!/usr/bin/env bash
# Where cargo-mcp-lint's time goes on bench/work/tree (run `bash bench/run.sh` first: it installs
# the tools, builds bench/work/bin/cargo-mcp-lint and prepares the tree). See bench/README.md.
#
#  1. which files pass the pre-filter (emulated with rg and the lists of lint/src/prefilter.rs:
#     TRIGGERS in crates that depend on rmcp, STANDALONE_TRIGGERS elsewhere), checked against the
#     linter's own count, and how many bytes syn parses;
#  2. the pre-filter automaton alone (a scratch crate in bench/work/acbench, built offline with the
#     aho-corasick version of Cargo.lock): MatchKind::Standard as in prefilter.rs versus
#     LeftmostFirst, which lets aho-corasick use its SIMD (Teddy) prefilter;
#  3. hyperfine: the linter with all threads and with -j 1; the linter and ripgrep on every crate
#     but rmcp's (nothing to parse: walk + read + pre-filter only); ripgrep on the tree; the walk
#     alone (rg --files);
#  4. perf (if installed): CPU samples by phase, per thread, and a timeline (bench/perf_phases.py).
#
# Writes only under bench/work/. Environment: RUNS (default 10), WARMUP (default 2).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work
TREE=$WORK/tree
LINT=$WORK/bin/cargo-mcp-lint
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
for needed in "$TREE" "$LINT" "$WORK/triggers.txt"; do
    [ -e "$needed" ] || { echo "error: $needed is missing; run bash bench/run.sh first" >&2; exit 1; }
done
exec > >(tee "$WORK/profile.log") 2>&1
section() { printf '\n== %s\n' "$*"; }
words() { # words NAME: the string literals of `pub const NAME` in lint/src/prefilter.rs
    sed -n "/pub const $1:/,/^];/p" lint/src/prefilter.rs | sed -n 's/^ *"\(.*\)",$/\1/p' | sed 's/\\"/"/g'
}
words TRIGGERS > "$WORK/triggers-full.txt"
words STANDALONE_TRIGGERS > "$WORK/triggers-standalone.txt"
[ -s "$WORK/triggers-standalone.txt" ] || cp "$WORK/triggers-full.txt" "$WORK/triggers-standalone.txt"
echo "TRIGGERS ($(wc -l < "$WORK/triggers-full.txt")): $(tr '\n' ' ' < "$WORK/triggers-full.txt")"
echo "STANDALONE_TRIGGERS ($(wc -l < "$WORK/triggers-standalone.txt")): $(tr '\n' ' ' < "$WORK/triggers-standalone.txt")"

# ----- 1. what passes the pre-filter ------------------------------------------------------------
section "1. files that pass the pre-filter (syn parses each of them)"
: > "$WORK/prefilter-parsed.txt"
: > "$WORK/prefilter-full-everywhere.txt"
sdk_crates=0
for crate in "$TREE"/*/; do
    crate=${crate%/}
    # A crate "depends on rmcp" when its manifest has a dependency whose package is rmcp
    # (manifest.rs: collect_sdk_dependencies); approximated on the text of the manifest.
    if grep -Eq '^rmcp *=|^\[([a-z.-]*\.)?dependencies\.rmcp\]|package *= *"rmcp"' "$crate/Cargo.toml" 2>/dev/null; then
        list=$WORK/triggers-full.txt
        sdk_crates=$((sdk_crates + 1))
    else
        list=$WORK/triggers-standalone.txt
    fi
    rg -l -F -g '*.rs' -f "$list" "$crate" >> "$WORK/prefilter-parsed.txt" || true
    rg -l -F -g '*.rs' -f "$WORK/triggers-full.txt" "$crate" >> "$WORK/prefilter-full-everywhere.txt" || true
done
"$LINT" --format json --exit-zero "$TREE" > "$WORK/profile-lint.json"
python3 - "$WORK" "$TREE" "$sdk_crates" <<'EOF'
import collections, json, os, sys
work, tree, sdk_crates = sys.argv[1], sys.argv[2], int(sys.argv[3])
size = os.path.getsize
rs = [os.path.join(d, f) for d, _, fs in os.walk(tree) for f in fs if f.endswith(".rs")]
parsed = open(f"{work}/prefilter-parsed.txt").read().split()
full = open(f"{work}/prefilter-full-everywhere.txt").read().split()
summary = json.load(open(f"{work}/profile-lint.json"))["summary"]
print(f".rs files: {len(rs)}, {sum(map(size, rs))} bytes; crates that depend on rmcp: {sdk_crates}")
print(f"pass the pre-filter (emulated): {len(parsed)} .rs files, {sum(map(size, parsed))} bytes")
print(f"  the linter's summary: {summary['files_scanned']} files scanned, "
      f"{summary['files_skipped_by_prefilter']} skipped, "
      f"{summary['files_scanned'] - summary['files_skipped_by_prefilter']} read further (.rs and Cargo.toml)")
print(f"with TRIGGERS in every crate (the pre-filter before the crate-aware one): {len(full)} files, "
      f"{sum(map(size, full))} bytes")
by_crate, files = collections.Counter(), collections.Counter()
for p in parsed:
    crate = p[len(tree) + 1:].split("/")[0]
    by_crate[crate] += size(p)
    files[crate] += 1
print("  parsed bytes by crate:", ", ".join(f"{c} {b} ({files[c]} files)" for c, b in by_crate.most_common(8)))
EOF

# ----- 2. the automaton alone -------------------------------------------------------------------
section "2. the pre-filter automaton alone (files in memory, best of 5)"
AC_VERSION=$(awk '/^name = "aho-corasick"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
mkdir -p "$WORK/acbench/src"
cat > "$WORK/acbench/Cargo.toml" <<EOF
[package]
name = "acbench"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
aho-corasick = "=$AC_VERSION"

[workspace]
EOF
cat > "$WORK/acbench/src/main.rs" <<'EOF'
use std::time::Instant;

use aho_corasick::{AhoCorasick, MatchKind};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let files: Vec<Vec<u8>> = std::fs::read_to_string(&args[1])
        .unwrap()
        .lines()
        .map(|path| std::fs::read(path).unwrap())
        .collect();
    let bytes: usize = files.iter().map(Vec::len).sum();
    println!("{} files, {} bytes", files.len(), bytes);
    for list in &args[2..] {
        let words: Vec<String> = std::fs::read_to_string(list)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        for (name, kind) in [
            ("Standard (AhoCorasick::new)", MatchKind::Standard),
            ("LeftmostFirst", MatchKind::LeftmostFirst),
        ] {
            let automaton = AhoCorasick::builder().match_kind(kind).build(&words).unwrap();
            let mut best = f64::MAX;
            let mut matching = 0;
            for _ in 0..5 {
                let start = Instant::now();
                matching = files.iter().filter(|f| automaton.is_match(f.as_slice())).count();
                best = best.min(start.elapsed().as_secs_f64());
            }
            println!(
                "{list} ({} words), {name:28} {:?}: {matching} files match, {:6.1} ms, {:5.0} MB/s",
                words.len(),
                automaton.kind(),
                best * 1e3,
                bytes as f64 / best / 1e6
            );
        }
    }
}
EOF
CARGO_TARGET_DIR=$WORK/acbench/target cargo build --quiet --release --offline \
    --manifest-path "$WORK/acbench/Cargo.toml"
find "$TREE" -name '*.rs' -type f > "$WORK/rs-files.txt"
"$WORK/acbench/target/release/acbench" "$WORK/rs-files.txt" \
    "$WORK/triggers-full.txt" "$WORK/triggers-standalone.txt"

# ----- 3. timings -------------------------------------------------------------------------------
section "3. timing: hyperfine --warmup $WARMUP --runs $RUNS"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
NO_RMCP=$(find "$TREE" -mindepth 1 -maxdepth 1 -type d ! -name 'rmcp*' | sort | tr '\n' ' ')
RG="rg -c -F -g '*.rs' -g Cargo.toml -f $WORK/triggers.txt"
hyperfine --warmup "$WARMUP" --runs "$RUNS" \
    --export-markdown "$WORK/profile.md" --export-json "$WORK/profile.json" \
    -n "cargo-mcp-lint" "$LINT --format concise --exit-zero $TREE > /dev/null" \
    -n "cargo-mcp-lint -j 1" "$LINT --format concise --exit-zero -j 1 $TREE > /dev/null" \
    -n "cargo-mcp-lint, all crates but rmcp*" "$LINT --format concise --exit-zero $NO_RMCP > /dev/null" \
    -n "ripgrep (trigger words)" "$RG $TREE > /dev/null" \
    -n "ripgrep, all crates but rmcp*" "$RG $NO_RMCP > /dev/null" \
    -n "rg --files (the walk alone)" "rg --files -g '*.rs' -g Cargo.toml $TREE > /dev/null"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$WORK/profile.json" <<'EOF'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
rg = r["ripgrep (trigger words)"]
for name, x in r.items():
    cpu = x["user"] + x["system"]
    print(f"{name:38s} {1000*x['mean']:8.1f} ms ± {1000*x['stddev']:5.1f}  CPU {1000*cpu:6.0f} ms "
          f"(user {1000*x['user']:5.0f}, sys {1000*x['system']:4.0f})  / ripgrep: wall {x['mean']/rg['mean']:5.2f}")
EOF

# ----- 4. perf ----------------------------------------------------------------------------------
section "4. perf: CPU samples by phase"
if command -v perf >/dev/null && perf record -q -o /dev/null true 2>/dev/null; then
    perf record -q -F 4000 --call-graph dwarf,32768 -o "$WORK/perf.data" \
        "$LINT" --format concise --exit-zero "$TREE" > /dev/null
    perf script -i "$WORK/perf.data" -F tid,time,ip,sym 2>/dev/null > "$WORK/perf.txt"
    python3 bench/perf_phases.py "$WORK/perf.txt"
else
    echo "perf is not available (or not permitted); skipped"
fi
