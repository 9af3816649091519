"""The tables of bench/proxy_vs_nginx.sh from its raw.jsonl (one JSON line per run).

Usage: python3 bench/proxy_vs_nginx_report.py RAW.jsonl RESULTS.md PROXY_LABEL "CONDITIONS"
(PROXY_LABEL: the proxy variant the pause/resume runs used; `hyper` is the plainest tokio + hyper
reverse proxy, proxy/examples/hyper_reverse_proxy.rs; every other variant but direct and nginx is
a proxy build.)

Per legacy server and connection count: the best of the repetitions of each variant (highest
calls/s; lowest CPU per call, each taken over the repetitions on its own), then the proxy's
ratios to nginx (and to `hyper`, the floor of the proxy's stack, when it ran); beside them the
ratio within each repetition (median and range), which a drift of the machine between
repetitions does not move, where the best-of ratio sets two runs of different minutes side by side. A run with a bad answer or a socket error is reported and left out.
"""

import json
import statistics
import sys
from collections import defaultdict


def fmt(value, digits=0):
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def main():
    raw, out, first_proxy, conditions = sys.argv[1:5]
    runs = [json.loads(line) for line in open(raw) if line.strip()]
    lines = [f"Conditions: {conditions}.", ""]
    failed = [r for r in runs if not r.get("strace") and (r.get("bad") or r.get("socket_errors"))]
    for r in failed:
        lines.append(
            f"- left out: {r['sdk']} {r['variant']} @{r['connections']} rep {r['rep']}: "
            f"{r['bad']} bad answers, {r['socket_errors']} socket errors; first: {r['first_bad']}"
        )
    good = [r for r in runs if not r.get("strace") and r not in failed]
    interleaved = [r for r in good if r["rep"] > 0]
    groups = defaultdict(list)
    for r in interleaved:
        groups[(r["sdk"], r["connections"], r["variant"])].append(r)
    sdks = list(dict.fromkeys(r["sdk"] for r in interleaved))
    conns = sorted({r["connections"] for r in interleaved})
    proxies = [v for v in dict.fromkeys(r["variant"] for r in interleaved)
               if v not in ("direct", "nginx")]
    proxies.sort(key=lambda v: v != first_proxy)

    def front_cpu(rs):
        """The lowest front CPU per call of the runs, with its user and system parts."""
        rs = [r for r in rs if r.get("front_cpu_us") is not None]
        if not rs:
            return "–"
        r = min(rs, key=lambda r: r["front_cpu_us"])
        if r.get("front_user_us") is None:
            return f"{fmt(r['front_cpu_us'])} µs"
        return (f"{fmt(r['front_cpu_us'])} µs ({fmt(r['front_user_us'])} + "
                f"{fmt(r['front_sys_us'])})")

    def best(sdk, c, variant, key, pick):
        values = [r[key] for r in groups.get((sdk, c, variant), []) if r.get(key) is not None]
        return pick(values) if values else None

    lines += [
        "",
        "Pass-through `tools/call echo`, best of the repetitions (calls/s: highest; CPU and "
        "context switches per call: lowest):",
        "",
        "| legacy server | conns | variant | calls/s | front CPU/call (user + system) "
        "| front ctx switches/call "
        "| legacy CPU/call | wrk CPU/call | foreign load (cores) | runs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for sdk in sdks:
        for c in conns:
            for variant in ["direct", "nginx"] + proxies:
                rs = groups.get((sdk, c, variant), [])
                if not rs:
                    continue
                foreign = [r["foreign_cores"] for r in rs]
                lines.append(
                    f"| {sdk} | {c} | {variant} | {fmt(best(sdk, c, variant, 'calls_per_s', max))} "
                    f"| {front_cpu(rs)} "
                    f"| {fmt(best(sdk, c, variant, 'front_switches', min), 2)} "
                    f"| {fmt(best(sdk, c, variant, 'legacy_cpu_us', min))} µs "
                    f"| {fmt(best(sdk, c, variant, 'wrk_cpu_us', min))} µs "
                    f"| {min(foreign):.2f}–{max(foreign):.2f} | {len(rs)} |"
                )
    lines += [
        "",
        "Proxy ÷ nginx (target: CPU per call ≤ 1.5, calls/s ≥ 0.95 in front of the TypeScript "
        "server):",
        "",
        "| legacy server | conns | proxy | calls/s proxy ÷ nginx | front CPU/call proxy ÷ nginx "
        "| calls/s nginx ÷ direct | calls/s proxy ÷ direct | front CPU/call proxy ÷ hyper "
        "| per repetition: calls/s proxy ÷ nginx | per repetition: CPU/call proxy ÷ nginx |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def ratio(a, b):
        return f"{a / b:.2f}" if a and b else "–"

    def paired(sdk, c, variant, key):
        """The ratio variant ÷ nginx of `key` within each repetition (the two ran in the same
        round, minutes apart at most, so a drift of the machine falls on both): median (range)."""
        def by_rep(v):
            return {r["rep"]: r.get(key) for r in groups.get((sdk, c, v), [])}

        ours, theirs = by_rep(variant), by_rep("nginx")
        ratios = sorted(ours[rep] / theirs[rep] for rep in ours
                        if ours[rep] and theirs.get(rep))
        if not ratios:
            return "–"
        middle = statistics.median(ratios)
        return f"{middle:.2f} ({ratios[0]:.2f}–{ratios[-1]:.2f})" if len(ratios) > 1 else f"{middle:.2f}"

    for sdk in sdks:
        for c in conns:
            for proxy in proxies:
                d = best(sdk, c, "direct", "calls_per_s", max)
                n = best(sdk, c, "nginx", "calls_per_s", max)
                p = best(sdk, c, proxy, "calls_per_s", max)
                nc = best(sdk, c, "nginx", "front_cpu_us", min)
                pc = best(sdk, c, proxy, "front_cpu_us", min)
                hc = best(sdk, c, "hyper", "front_cpu_us", min) if proxy != "hyper" else None
                lines.append(
                    f"| {sdk} | {c} | {proxy} | **{ratio(p, n)}** | **{ratio(pc, nc)}** "
                    f"| {ratio(n, d)} | {ratio(p, d)} | {ratio(pc, hc)} "
                    f"| {paired(sdk, c, proxy, 'calls_per_s')} | {paired(sdk, c, proxy, 'front_cpu_us')} |"
                )
    rounds = [r for r in good if r["rep"] == 0]
    if rounds:
        lines += [
            "",
            "Pause/resume rounds (`test_input_required_result_elicitation`: `input_required`, then the retry with the answer; "
            "one flow = two requests) against pass-through, the same proxy, back to back:",
            "",
            "| legacy server | conns | pass-through calls/s | proxy CPU per pass-through call "
            "| flows/s | proxy CPU per flow | ratio | legacy CPU per flow |",
            "|---|---|---|---|---|---|---|---|",
        ]
        pairs = defaultdict(dict)
        for r in rounds:
            pairs[(r["sdk"], r["connections"])][r["variant"]] = r
        for (sdk, c), pair in pairs.items():
            p, f = pair.get(first_proxy), pair.get("rounds")
            if not p or not f:
                continue
            lines.append(
                f"| {sdk} | {c} | {fmt(p['calls_per_s'])} | {fmt(p['front_cpu_us'])} µs "
                f"| {fmt(f['calls_per_s'])} | {fmt(f['front_cpu_us'])} µs "
                f"| {f['front_cpu_us'] / p['front_cpu_us']:.2f} | {fmt(f['legacy_cpu_us'])} µs |"
            )
    traces = [r for r in runs if r.get("strace")]
    if traces:
        lines += [
            "",
            "Syscalls per call of each front (`strace -c -f`, a separate short run at 16 "
            "connections; strace slows the front, so only the counts are meaningful):",
            "",
            "| legacy server | front | syscalls/call | the most frequent, per call |",
            "|---|---|---|---|",
        ]
        for r in traces:
            top = ", ".join(f"{k} {v}" for k, v in r["top"].items())
            lines.append(
                f"| {r['sdk']} | {r['variant']} | {r['syscalls_per_call']:.1f} | {top} |"
            )
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
