"""Summarises bench/sdk_backends.sh: a markdown table (medians over the repetitions, proxy/direct
ratios, the proxy's CPU per call) and a PNG plot of throughput and p99 against concurrency.

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
PEERS = ["direct", "proxy", "fastmcp"]


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


def fmt(value, digits=0):
    return "–" if value is None else f"{value:,.{digits}f}"


def main(raw, out_md, out_png):
    runs, fixed = load(raw)
    concurrency = sorted({c for (_, _, c) in runs})
    rows = [
        "Closed loop (each connection sends back to back); medians over the repetitions; ratios to "
        "direct in the same run. CPU µs/call: the translating proxy's own process.",
        "",
        "| backend | conns | peer | calls/s | / direct | p50 µs | p99 µs | proxy CPU µs/call "
        "| backend CPU µs/call | errors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for sdk in SDKS:
        for c in concurrency:
            direct = median(runs.get((sdk, "direct", c), []), lambda r: r["ops_per_s"])
            for peer in PEERS:
                these = runs.get((sdk, peer, c), [])
                if not these:
                    continue
                tput = median(these, lambda r: r["ops_per_s"])
                ratio = tput / direct if direct and tput is not None else None
                rows.append(
                    f"| {sdk} | {c} | {peer} | {fmt(tput)} | {'–' if peer == 'direct' else '**' + fmt(ratio, 2) + '**'} "
                    f"| {fmt(median(these, lambda r: r['latency_us']['p50']))} "
                    f"| {fmt(median(these, lambda r: r['latency_us']['p99']))} "
                    f"| {fmt(median(these, lambda r: cpu_us(r, 'proxy')), 1)} "
                    f"| {fmt(median(these, lambda r: cpu_us(r, 'backend')), 1)} "
                    f"| {sum(r['errors'] for r in these)} |"
                )
    rows += [
        "",
        "Fixed call rate (16 connections, each paced to its share of the rate):",
        "",
        "| backend | peer | rate asked | calls/s | p50 µs | proxy CPU µs/call | backend CPU µs/call |",
        "|---|---|---|---|---|---|---|",
    ]
    for sdk in SDKS:
        for peer in PEERS:
            run = fixed.get((sdk, peer))
            if not run:
                continue
            rows.append(
                f"| {sdk} | {peer} | {run['rate']} | {fmt(run['ops_per_s'])} | {fmt(run['latency_us']['p50'])} "
                f"| {fmt(cpu_us(run, 'proxy'), 1)} | {fmt(cpu_us(run, 'backend'), 1)} |"
            )
    with open(out_md, "w") as out:
        out.write("\n".join(rows) + "\n")

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {"typescript": "tab:blue", "python": "tab:orange", "rmcp": "tab:green"}
    for sdk in SDKS:
        for peer, style in (("direct", ":"), ("proxy", "-"), ("fastmcp", "--")):
            # A peer that completed no call at some concurrency has no point there (log scale).
            xs = [c for c in concurrency if runs.get((sdk, peer, c))
                  and median(runs[(sdk, peer, c)], lambda r: r["ops_per_s"])]
            if not xs:
                continue
            label = f"{sdk} {peer}"
            left.plot(xs, [median(runs[(sdk, peer, c)], lambda r: r["ops_per_s"]) for c in xs],
                      style, marker="o", color=colors[sdk], label=label)
            right.plot(xs, [median(runs[(sdk, peer, c)], lambda r: r["latency_us"]["p99"]) / 1000 for c in xs],
                       style, marker="o", color=colors[sdk], label=label)
    for axis, title in ((left, "throughput (calls/s)"), (right, "p99 latency (ms)")):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xticks(concurrency)
        axis.set_xticklabels([str(c) for c in concurrency])
        axis.set_xlabel("keep-alive connections")
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)
    figure.suptitle("tools/call echo: direct (dotted), mcp-mrtr-proxy (solid), FastMCP create_proxy (dashed)")
    figure.tight_layout()
    figure.savefig(out_png, dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:4])
