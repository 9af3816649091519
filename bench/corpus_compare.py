#!/usr/bin/env python3
"""Scores `cargo-mcp-lint` and PyPI `mcp-migrate` on a real-project corpus, side by side.

Usage: python3 bench/corpus_compare.py [--language python|typescript] CORPUS LINT_BINARY MCP_MIGRATE_BINARY

CORPUS is the directory the language's fetch script fills (`tests/corpus/fetch-python.sh`, the
default, or `tests/corpus/typescript/fetch.sh`); the ground truth is that corpus's
(`tests/corpus/python-ground-truth.txt` or `tests/corpus/typescript/ground-truth.txt`: expect /
accept / forbid, see its header). Each tool runs on
each package directory. mcp-migrate's rules are mapped onto the catalogue (R006 -> legacy-sse-
transport, R007 -> deprecated-roots/-sampling/-logging, R012 -> deprecated-logging, R013 ->
legacy-resource-subscription, R017/R018 -> server-initiated-request); its other rules (Mcp-Session-Id,
tool ordering, caching hints, ...) have no counterpart and are listed apart. mcp-migrate reports
some findings on a neighbouring line (the argument line of a call, the import of a module), so a
finding of either tool counts for an expected entry of its rule in the same file within 3 lines.
"""

import json
import os
import re
import subprocess
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
TRUTHS = {
    "python": os.path.join(HERE, "..", "tests", "corpus", "python-ground-truth.txt"),
    "typescript": os.path.join(HERE, "..", "tests", "corpus", "typescript", "ground-truth.txt"),
}
WINDOW = 3
MAPPING = {
    "R006": ["legacy-sse-transport"],
    "R007": ["deprecated-roots", "deprecated-sampling", "deprecated-logging"],
    "R012": ["deprecated-logging"],
    "R013": ["legacy-resource-subscription"],
    "R017": ["server-initiated-request"],
    "R018": ["server-initiated-request"],
}


def ground_truth(language):
    entries = []
    for line in open(TRUTHS[language], encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        head = line.split(" | ")[0].split()
        kind, location, rule = head[0], head[1], head[2]
        path, number = location.rsplit(":", 1)
        entries.append((kind, path, int(number), rule))
    return entries


def packages(corpus):
    return sorted(d for d in os.listdir(corpus) if not d.startswith(".") and os.path.isdir(os.path.join(corpus, d)))


def lint_findings(corpus, binary):
    out = subprocess.run(
        [binary, "--format", "concise", "--exit-zero", *packages(corpus)],
        cwd=corpus, capture_output=True, text=True, check=True,
    ).stdout
    found = []
    for line in out.splitlines():
        match = re.match(r"(.+?):(\d+):\d+: \w+\[MCP\d+ ([a-z-]+)\]", line)
        if match:
            found.append((match.group(1).removeprefix("./"), int(match.group(2)), [match.group(3)]))
    return found, Counter()


def migrate_findings(corpus, binary):
    found, other = [], Counter()
    for package in packages(corpus):
        result = subprocess.run(
            [binary, "check", "--format", "json", "--fail-on", "never", package],
            cwd=corpus, capture_output=True, text=True,
        )
        report = json.loads(result.stdout)
        for finding in report["findings"]:
            rules = MAPPING.get(finding["rule"])
            path = f"{package}/{finding['path']}"
            if rules is None:
                other[finding["rule"]] += 1
            else:
                found.append((path, int(finding.get("line") or 0), rules))
    return found, other


def score(found, truth):
    expected = [(p, n, r) for kind, p, n, r in truth if kind == "expect"]
    accepted = [(p, n, r) for kind, p, n, r in truth if kind == "accept"]
    forbidden = [(p, n, r) for kind, p, n, r in truth if kind == "forbid"]

    def near(entry, finding):
        return entry[0] == finding[0] and abs(entry[1] - finding[1]) <= WINDOW and entry[2] in finding[2]

    hits = {entry for entry in expected if any(near(entry, f) for f in found)}
    counted = [f for f in found if not any(near(a, f) for a in accepted)]
    matched = [f for f in counted if any(near(e, f) for e in expected)]
    unexpected = [f for f in counted if not any(near(e, f) for e in expected)]
    looked_alike = [f for f in found if any(f[0] == p and f[1] == n for p, n, _ in forbidden)]
    recall = len(hits) / len(expected) if expected else 1.0
    precision = len(matched) / len(counted) if counted else 1.0
    return {
        "expected": len(expected), "found": len(hits), "reported": len(found),
        "unexpected": len(unexpected), "forbidden": len(looked_alike),
        "recall": recall, "precision": precision,
        "missed": sorted(set(expected) - hits), "noise": unexpected,
    }


def main():
    arguments = sys.argv[1:]
    language = "python"
    if arguments[:1] == ["--language"]:
        language, arguments = arguments[1], arguments[2:]
    corpus, lint_binary, migrate_binary = arguments[:3]
    truth = ground_truth(language)
    rows = []
    for name, (found, other) in [
        ("cargo-mcp-lint", lint_findings(corpus, lint_binary)),
        ("mcp-migrate 0.21.0", migrate_findings(corpus, migrate_binary)),
    ]:
        result = score(found, truth)
        rows.append((name, result, other))
    print(f"{len(packages(corpus))} packages, {sum(1 for t in truth if t[0] == 'expect')} expected findings")
    print("| tool | found / expected | recall | reported (catalogue rules) | unexpected | look-alikes reported | precision | other rules |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r, other in rows:
        others = ", ".join(f"{rule} x{count}" for rule, count in sorted(other.items())) or "-"
        print(f"| {name} | {r['found']} / {r['expected']} | {r['recall']:.3f} | {r['reported']} | {r['unexpected']} | {r['forbidden']} | {r['precision']:.3f} | {others} |")
    for name, r, _ in rows:
        for path, line, rule in r["missed"]:
            print(f"{name}: missed {path}:{line} {rule}")
        for path, line, rules in r["noise"]:
            print(f"{name}: unexpected {path}:{line} {'/'.join(rules)}")


if __name__ == "__main__":
    main()
