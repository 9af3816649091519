#!/usr/bin/env bash
# Where cargo-mcp-lint's time goes on bench/work/tree (run `bash bench/run.sh` first: it installs
# the tools, builds bench/work/bin/cargo-mcp-lint and prepares the tree). See bench/README.md.
#
#  1. which files pass the pre-filter, because of which trigger words, and how many bytes syn parses;
#  2. the pre-filter automaton alone (a scratch crate in bench/work/acbench, built offline with the
#     aho-corasick version of Cargo.lock): MatchKind::Standard as in lint/src/prefilter.rs versus
#     LeftmostFirst, with the current and with a tighter trigger list;
#  3. hyperfine: the linter on the tree, on a copy of the tree in which the files that pass only
#     because of the loose words (notify_, Capabilities, Sse, sse_) are edited so that they no longer
#     pass (emulates the tighter trigger list without touching the linter), with -j 1, and ripgrep;
#  4. perf (if installed): CPU samples by phase and a timeline (bench/perf_phases.py).
#
# Writes only under bench/work/. Environment: RUNS (default 10), WARMUP (default 2).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work
TREE=$WORK/tree
TIGHT=$WORK/tree-tight
LINT=$WORK/bin/cargo-mcp-lint
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
for needed in "$TREE" "$LINT" "$WORK/triggers.txt"; do
    [ -e "$needed" ] || { echo "error: $needed is missing; run bash bench/run.sh first" >&2; exit 1; }
done
exec > >(tee "$WORK/profile.log") 2>&1
section() { printf '\n== %s\n' "$*"; }

# The tighter list: the loose words replaced by the full names the rules need
# (symbols.rs: METHOD_NAMES, capability_field, symbol_name).
sed -e '/^notify_$/c\notify_logging_message\nnotify_url_elicitation_completed\nnotify_roots_list_changed' \
    -e '/^Capabilities$/c\ServerCapabilities\nClientCapabilities' \
    -e '/^Sse$/c\SseServer\nSseClient' \
    -e '/^sse_$/c\sse_server\nsse_client' \
    "$WORK/triggers.txt" > "$WORK/triggers-tight.txt"

# ----- 1. what passes the pre-filter ------------------------------------------------------------
section "1. files that pass the pre-filter (rg -F with the same words; syn parses each of them)"
rg -o -F -g '*.rs' -f "$WORK/triggers.txt" "$TREE" > "$WORK/prefilter-hits.txt"
rg -l -F -g '*.rs' -f "$WORK/triggers-tight.txt" "$TREE" | sort > "$WORK/prefilter-tight-files.txt" || true
python3 - "$WORK" "$TREE" <<'EOF'
import collections, os, sys
work, tree = sys.argv[1], sys.argv[2]
hits = collections.defaultdict(set)
for line in open(f"{work}/prefilter-hits.txt"):
    path, word = line.rstrip("\n").split(":", 1)
    hits[path].add(word)
tight = set(open(f"{work}/prefilter-tight-files.txt").read().split())
size = os.path.getsize
total_rs = [os.path.join(d, f) for d, _, fs in os.walk(tree) for f in fs if f.endswith(".rs")]
print(f".rs files: {len(total_rs)}, {sum(map(size, total_rs))} bytes")
print(f"pass the pre-filter: {len(hits)} files, {sum(map(size, hits))} bytes")
print(f"would pass the tighter list: {len(tight)} files, {sum(map(size, tight))} bytes")
loose = [p for p in hits if p not in tight]
print(f"pass only because of loose words: {len(loose)} files, {sum(map(size, loose))} bytes")
by_words, by_bytes = collections.Counter(), collections.Counter()
for p in loose:
    words = " + ".join(sorted(hits[p]))
    by_words[words] += 1
    by_bytes[words] += size(p)
print("  bytes      files  trigger words found in them")
for words, b in by_bytes.most_common(10):
    print(f"  {b:9d}  {by_words[words]:5d}  {words}")
crates = collections.Counter(p[len(tree) + 1:].split("/")[0] for p in loose)
print("  crates:", ", ".join(f"{c} {n}" for c, n in crates.most_common(10)))
with open(f"{work}/prefilter-loose-files.txt", "w") as out:
    out.write("\n".join(sorted(loose)) + "\n")
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
"$WORK/acbench/target/release/acbench" "$WORK/rs-files.txt" "$WORK/triggers.txt" "$WORK/triggers-tight.txt"

# ----- 3. timings -------------------------------------------------------------------------------
section "3. the tree with the loose-only files edited so that they no longer pass ($TIGHT)"
rm -rf "$TIGHT"
cp -r "$TREE" "$TIGHT"
python3 - "$WORK" "$TREE" "$TIGHT" <<'EOF'
import sys
work, tree, tight = sys.argv[1:4]
words = [w.encode() for w in open(f"{work}/triggers.txt").read().splitlines()]
def defuse(word):
    # Same length, same bytes except the case of the last letter: the file keeps its size.
    i = max(i for i, c in enumerate(word) if chr(c).isalpha())
    return word[:i] + bytes([word[i] ^ 0x20]) + word[i + 1:]
count = 0
for path in open(f"{work}/prefilter-loose-files.txt").read().split():
    target = tight + path[len(tree):]
    data = open(target, "rb").read()
    for word in words:
        data = data.replace(word, defuse(word))
    open(target, "wb").write(data)
    count += 1
print(f"edited {count} files (same sizes)")
EOF
left=$(rg -l -F -g '*.rs' -f "$WORK/triggers.txt" "$TIGHT" | wc -l)
echo "files of $TIGHT that pass the current pre-filter: $left (expected: $(wc -l < "$WORK/prefilter-tight-files.txt"))"

section "3. timing: hyperfine --warmup $WARMUP --runs $RUNS"
hyperfine --warmup "$WARMUP" --runs "$RUNS" \
    --export-markdown "$WORK/profile.md" --export-json "$WORK/profile.json" \
    -n "cargo-mcp-lint" "$LINT --format concise --exit-zero $TREE > /dev/null" \
    -n "cargo-mcp-lint, loose-only files defused" "$LINT --format concise --exit-zero $TIGHT > /dev/null" \
    -n "cargo-mcp-lint -j 1" "$LINT --format concise --exit-zero -j 1 $TREE > /dev/null" \
    -n "ripgrep (trigger words)" "rg -c -F -g '*.rs' -g Cargo.toml -f $WORK/triggers.txt $TREE > /dev/null"
python3 - "$WORK/profile.json" <<'EOF'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
rg = r["ripgrep (trigger words)"]["mean"]
for name, x in r.items():
    print(f"{name:42s} {1000*x['mean']:8.1f} ms ± {1000*x['stddev']:5.1f}  "
          f"user {1000*x['user']:6.0f} ms  sys {1000*x['system']:4.0f} ms  / ripgrep = {x['mean']/rg:5.2f}")
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
