"""Where cargo-mcp-lint spends its CPU time: classifies the samples of
`perf script -F tid,time,ip,sym` (recorded with --call-graph dwarf) into phases of the linter, and
prints a timeline of the run in 50 ms buckets (all threads). Used by bench/profile.sh.

Each sample goes to the first phase, in the order below, that any frame of its stack matches: the
order puts the specific phases (macro bodies re-parsed by the analyzer, dropping the syn tree,
tokenizing) before the general ones (syn parsing, the analyzer walk)."""

import collections
import re
import sys

PHASES = [
    ("process start (exec, page faults)", r"load_elf_binary|do_execveat"),
    ("output", r"cargo_mcp_lint::output::"),
    ("analyzer: macro bodies re-parsed", r"visit_fragments|rust::macros::fragments|rust::macros::collect|macros::Json"),
    ("drop syn tree / token streams", r"drop_in_place<syn::|drop_in_place<proc_macro2|<proc_macro2::fallback::TokenStream as core::ops::drop::Drop>::drop"),
    ("tokenize (proc_macro2 from_str)", r"from_str_checked|proc_macro2::parse::"),
    ("syn parse (TokenBuffer + parsers)", r"syn::parse_file|syn::buffer::|syn::parse::|syn::item::|syn::expr::|syn::ty::|syn::path::|syn::attr::|syn::token::|syn::pat::|syn::generics::|syn::stmt::|syn::lit::"),
    ("analyzer walk (visitor, use map)", r"rust::analyzer::|rust::imports::|Analyzer|syn::gen::visit"),
    ("pre-filter (aho-corasick)", r"prefilter::may_match|aho_corasick::"),
    ("read files", r"std::fs::read|read_to_end|sys::fs::|ksys_read|vfs_read|do_sys_open|__x64_sys_openat|__x64_sys_read|__x64_sys_statx|__x64_sys_newfstatat"),
    ("manifests (lint_manifest)", r"lint_manifest|manifest::Manifest::check"),
    ("crate index (CrateIndex::context_for, main thread)", r"walk::CrateIndex::context_for"),
    ("targets: sort paths, config excludes (getcwd per file)", r"compare_components|Config::is_excluded|globset::|getcwd|merge_sort|slice::sort"),
    ("directory walk (ignore)", r"ignore::walk|ignore::dir|ignore::gitignore|getdents"),
    ("suppressions / finish", r"cargo_mcp_lint::suppress|cargo_mcp_lint::finish"),
    ("rayon idle / stealing", r"rayon_core::sleep|rayon_core::registry::WorkerThread::wait_until_cold|crossbeam_deque"),
    ("allocator (caller unknown)", r"malloc|_int_free|cfree|realloc"),
]
PHASES = [(name, re.compile(pattern)) for name, pattern in PHASES]
# A sample starts with "<tid> <time>:" (the tid is right-aligned); its frames follow, indented.
HEADER = re.compile(r"^\s*(\d+)\s+(\d+\.\d+):\s*$")


def read_samples(path):
    samples, current = [], None
    for line in open(path, errors="replace"):
        if not line.strip():
            if current:
                samples.append(current)
            current = None
        elif HEADER.match(line):
            tid, time = HEADER.match(line).groups()
            current = (int(tid), float(time), [])
        elif current:
            current[2].append(line.strip().split(" ", 1)[-1])
    if current:
        samples.append(current)
    return samples


def phase(frames):
    stack = "\n".join(frames)
    return next((name for name, pattern in PHASES if pattern.search(stack)), "other")


def main(path):
    samples = read_samples(path)
    if not samples:
        sys.exit("no samples")
    start = min(t for _, t, _ in samples)
    end = max(t for _, t, _ in samples)
    totals = collections.Counter()
    timeline = collections.defaultdict(collections.Counter)
    threads = collections.defaultdict(set)
    for tid, t, frames in samples:
        name = phase(frames)
        totals[name] += 1
        bucket = int((t - start) * 20)
        timeline[bucket][name] += 1
        threads[bucket].add(tid)
    n = sum(totals.values())
    print(f"{n} samples over {1000 * (end - start):.0f} ms, "
          f"{len({tid for tid, _, _ in samples})} threads")
    print("share of CPU samples by phase:")
    for name, count in totals.most_common():
        print(f"  {100 * count / n:5.1f}%  {name}")
    print("threads (first and last sample, samples, top phases):")
    per_thread = collections.defaultdict(list)
    for tid, t, frames in samples:
        per_thread[tid].append((t, phase(frames)))
    for tid, items in sorted(per_thread.items(), key=lambda kv: kv[1][0][0]):
        first, last = 1000 * (items[0][0] - start), 1000 * (items[-1][0] - start)
        top = ", ".join(f"{name} {count}" for name, count in
                        collections.Counter(name for _, name in items).most_common(3))
        print(f"  tid {tid}: {first:6.0f} .. {last:6.0f} ms, {len(items):5d} samples: {top}")
    print("timeline (50 ms buckets: threads seen, samples, top phases):")
    for bucket in sorted(timeline):
        top = ", ".join(f"{name} {count}" for name, count in timeline[bucket].most_common(3))
        print(f"  {50 * bucket:5d} ms  {len(threads[bucket])} thr  {sum(timeline[bucket].values()):4d}  {top}")


if __name__ == "__main__":
    main(sys.argv[1])
