"""Summarises bench/sdk_backends.sh: a markdown table (medians over the repetitions, proxy/direct
ratios: the median of each repetition's pair, the proxy's CPU per call) and a PNG plot of
throughput and p99 against concurrency.

Usage: sdk_backends_report.py RAW.jsonl RESULTS.md PLOT.png
"""

import json
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SDKS = ["typescript", "python", "rmcp"]
PEERS = ["direct", "proxy", "direct@pinned", "proxy@pinned", "fastmcp"]
STDIO_PEERS = ["stdio-direct", "proxy-stdio", "uplift"]


def load(path):
    runs = defaultdict(list)
    fixed = {}
    with open(path) as lines:
        for line in lines:
            run = json.loads(line)
            if run.get("rate"):
                fixed[(run["sdk"], run["peer"])] = run
            else:
                runs[(run["sdk"], run["peer"], run["connections"])].append(run)
    return runs, fixed


def median(runs, pick):
    values = [pick(run) for run in runs]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def cpu_us(run, label):
    entry = (run.get("cpu") or {}).get(label)
    return entry.get("us_per_op") if entry else None


def pairs(these, directs):
    """(run, direct run of the same repetition) for each run of `these` whose direct run did
    some work (a pinned peer against the pinned direct run)."""
    by_rep = {run.get("rep"): run for run in directs}
    for run in these:
        direct = by_rep.get(run.get("rep"))
        if direct and direct["ops_per_s"]:
            yield run, direct


def paired_ratio(these, directs):
    """The median over repetitions of this peer's throughput over the direct run of the same
    repetition."""
    ratios = [run["ops_per_s"] / direct["ops_per_s"] for run, direct in pairs(these, directs)]
    return statistics.median(ratios) if ratios else None


QUIET = 0.3


def quiet_pairs(these, directs):
    """The ratios of the pairs in which both runs saw the rest of the machine use less than
    QUIET cores: what the ratio is when this benchmark has the machine to itself."""
    return [run["ops_per_s"] / direct["ops_per_s"] for run, direct in pairs(these, directs)
            if all((others(r) if others(r) is not None else 9) < QUIET for r in (run, direct))]


def cores(run, label):
    entry = (run.get("cpu") or {}).get(label)
    return entry.get("cores") if entry else None


def others(run):
    return (run.get("cpu") or {}).get("other_cores")


def fmt(value, digits=0):
    return "–" if value is None else f"{value:,.{digits}f}"


def main(raw, out_md, out_png):
    runs, fixed = load(raw)
    concurrency = sorted({c for (_, peer, c) in runs if peer in PEERS})
    rows = [
        "Closed loop (each connection sends back to back); medians over the repetitions; `/ direct`: "
        "the median over the repetitions of the ratio to the direct run of the same pair "
        "(`@pinned`: to the pinned direct run). CPU µs/call: the translating proxy's own process; "
        "others' cores: what the rest of the machine used meanwhile (of 2); quiet pairs: the "
        f"ratios of the pairs whose two runs both saw others use < {QUIET} cores.",
        "",
        "| backend | conns | peer | calls/s | / direct | quiet pairs | p50 µs | p99 µs "
        "| proxy CPU µs/call | backend CPU µs/call | backend cores | others' cores | errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for sdk in SDKS:
        for c in concurrency:
            for peer in PEERS:
                these = runs.get((sdk, peer, c), [])
                if not these:
                    continue
                tput = median(these, lambda r: r["ops_per_s"])
                base = "direct@pinned" if peer.endswith("@pinned") else "direct"
                ratio = paired_ratio(these, runs.get((sdk, base, c), []))
                shown = "–" if peer.startswith("direct") else "**" + fmt(ratio, 2) + "**"
                quiet = "–"
                if peer in ("proxy", "proxy@pinned"):
                    quiet = ", ".join(fmt(r, 2) for r in
                                      quiet_pairs(these, runs.get((sdk, base, c), []))) or "none"
                rows.append(
                    f"| {sdk} | {c} | {peer} | {fmt(tput)} | {shown} | {quiet} "
                    f"| {fmt(median(these, lambda r: r['latency_us']['p50']))} "
                    f"| {fmt(median(these, lambda r: r['latency_us']['p99']))} "
                    f"| {fmt(median(these, lambda r: cpu_us(r, 'proxy')), 1)} "
                    f"| {fmt(median(these, lambda r: cpu_us(r, 'backend')), 1)} "
                    f"| {fmt(median(these, lambda r: cores(r, 'backend')), 2)} "
                    f"| {fmt(median(these, others), 2)} "
                    f"| {sum(r['errors'] for r in these)} |"
                )
    rows += [
        "",
        "Where the throughput ratio comes from, per pair (medians over the repetitions): a "
        "single-threaded legacy server answers (cores it got) ÷ (its CPU per call) calls per "
        "second, so the ratio to direct is the product of *backend cores* (what the legacy "
        "server got through the proxy ÷ directly) and *backend work* (its CPU per call directly "
        "÷ through the proxy: above 1, it does less work per call behind the proxy).",
        "",
        "| backend | conns | peer | / direct | backend cores | backend work | others' cores (direct, proxy) |",
        "|---|---|---|---|---|---|---|",
    ]
    for sdk in SDKS:
        for c in concurrency:
            for peer, base in (("proxy", "direct"), ("proxy@pinned", "direct@pinned")):
                split = []
                for run, direct in pairs(runs.get((sdk, peer, c), []), runs.get((sdk, base, c), [])):
                    cores_ratio = (cores(run, "backend") or 0) / (cores(direct, "backend") or 1)
                    work = (cpu_us(direct, "backend") or 0) / (cpu_us(run, "backend") or 1)
                    split.append((run["ops_per_s"] / direct["ops_per_s"], cores_ratio, work,
                                  others(direct), others(run)))
                if not split:
                    continue
                med = [statistics.median(p[i] for p in split) for i in range(3)]
                seen = "; ".join(f"{fmt(p[3], 2)}, {fmt(p[4], 2)}" for p in split)
                rows.append(f"| {sdk} | {c} | {peer} | {fmt(med[0], 2)} | {fmt(med[1], 2)} "
                            f"| {fmt(med[2], 2)} | {seen} |")
    stdio_concurrency = sorted({c for (_, peer, c) in runs if peer in STDIO_PEERS})
    if stdio_concurrency:
        rows += [
            "",
            "Stdio: one process per run, started by the load generator (the legacy server itself, "
            "or a bridge in front of it); `conns` concurrent requests on its pipe; `/ direct`: the "
            "median over the repetitions of the ratio to stdio-direct of the same repetition. "
            "Bridge CPU µs/call: the bridge's own process; legacy CPU: every legacy process.",
            "",
            "| backend | conns | peer | calls/s | / direct | p50 µs | p99 µs | bridge CPU µs/call "
            "| legacy CPU µs/call | others' cores | errors |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for sdk in SDKS:
            for c in stdio_concurrency:
                for peer in STDIO_PEERS:
                    these = runs.get((sdk, peer, c), [])
                    if not these:
                        continue
                    ratio = paired_ratio(these, runs.get((sdk, "stdio-direct", c), []))
                    shown = "–" if peer == "stdio-direct" else "**" + fmt(ratio, 2) + "**"
                    rows.append(
                        f"| {sdk} | {c} | {peer} | {fmt(median(these, lambda r: r['ops_per_s']))} "
                        f"| {shown} "
                        f"| {fmt(median(these, lambda r: r['latency_us']['p50']))} "
                        f"| {fmt(median(these, lambda r: r['latency_us']['p99']))} "
                        f"| {fmt(median(these, lambda r: cpu_us(r, 'proxy')), 1)} "
                        f"| {fmt(median(these, lambda r: cpu_us(r, 'backend')), 1)} "
                        f"| {fmt(median(these, others), 2)} "
                        f"| {sum(r['errors'] for r in these)} |"
                    )
    held = [(sdk, peer) for sdk in SDKS for (s2, peer, c) in runs if s2 == sdk
            and runs[(s2, peer, c)][0].get("held")]
    if held:
        rows += [
            "",
            "Behind paused calls: 16 connections of `echo` through a fresh proxy (`--pool-size 64`) "
            "with no paused call, then through another one holding the given number of "
            "`test_elicitation` calls paused (answered `input_required`, never retried); refused: "
            "calls answered 503 (pool at capacity) after waiting for a lane.",
            "",
            "| backend | proxy | paused calls held | calls/s | / no pause | p99 µs | refused |",
            "|---|---|---|---|---|---|---|",
        ]
        for sdk in SDKS:
            base = None
            for (s2, peer) in held:
                if s2 != sdk:
                    continue
                run = runs[(sdk, peer, 16)][0]
                if base is None:
                    base = run["ops_per_s"]
                ratio = run["ops_per_s"] / base if base else None
                rows.append(
                    f"| {sdk} | {peer} | {run.get('paused_held', 0)} | {fmt(run['ops_per_s'])} "
                    f"| {fmt(ratio, 2)} | {fmt(run['latency_us']['p99'])} | {run['errors']} |"
                )
    rows += [
        "",
        "Fixed call rate (16 connections, each paced to its share of the rate):",
        "",
        "| backend | peer | rate asked | calls/s | p50 µs | proxy CPU µs/call | backend CPU µs/call "
        "| others' cores |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for sdk in SDKS:
        for peer in PEERS:
            run = fixed.get((sdk, peer))
            if not run:
                continue
            rows.append(
                f"| {sdk} | {peer} | {run['rate']} | {fmt(run['ops_per_s'])} | {fmt(run['latency_us']['p50'])} "
                f"| {fmt(cpu_us(run, 'proxy'), 1)} | {fmt(cpu_us(run, 'backend'), 1)} "
                f"| {fmt(others(run), 2)} |"
            )
    with open(out_md, "w") as out:
        out.write("\n".join(rows) + "\n")

    stdio_row = bool(stdio_concurrency)
    figure, axes = plt.subplots(2 if stdio_row else 1, 2, figsize=(11, 8.4 if stdio_row else 4.2),
                                squeeze=False)
    colors = {"typescript": "tab:blue", "python": "tab:orange", "rmcp": "tab:green"}
    panels = [(axes[0], concurrency, "keep-alive connections (Streamable HTTP)",
               (("direct", ":"), ("proxy", "-"), ("fastmcp", "--")))]
    if stdio_row:
        panels.append((axes[1], stdio_concurrency, "concurrent requests on one stdio pipe",
                       (("stdio-direct", ":"), ("proxy-stdio", "-"), ("uplift", "-."))))
    for (left, right), xs_all, xlabel, peers in panels:
        for sdk in SDKS:
            for peer, style in peers:
                # A peer that completed no call at some concurrency has no point there (log scale).
                xs = [c for c in xs_all if runs.get((sdk, peer, c))
                      and median(runs[(sdk, peer, c)], lambda r: r["ops_per_s"])]
                if not xs:
                    continue
                label = f"{sdk} {peer}"
                left.plot(xs, [median(runs[(sdk, peer, c)], lambda r: r["ops_per_s"]) for c in xs],
                          style, marker="o", color=colors[sdk], label=label)
                right.plot(xs, [median(runs[(sdk, peer, c)], lambda r: r["latency_us"]["p99"]) / 1000
                                for c in xs],
                           style, marker="o", color=colors[sdk], label=label)
        for axis, title in ((left, "throughput (calls/s)"), (right, "p99 latency (ms)")):
            axis.set_xscale("log", base=2)
            axis.set_yscale("log")
            axis.set_xticks(xs_all)
            axis.set_xticklabels([str(c) for c in xs_all])
            axis.set_xlabel(xlabel)
            axis.set_title(title)
            axis.grid(True, which="both", alpha=0.3)
        left.legend(fontsize=7)
    figure.suptitle("tools/call echo: direct (dotted), mcp-mrtr-proxy (solid), FastMCP create_proxy "
                    "(dashed), mcp-uplift (dash-dot)")
    figure.tight_layout()
    figure.savefig(out_png, dpi=110)

if __name__ == "__main__":
    main(*sys.argv[1:4])
