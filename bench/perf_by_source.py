"""Where a proxy's sampled CPU time goes in its source, through inlining: the `perf record -e
cpu-clock` samples of bench/proxy_perf_profile.sh (OUT/LABEL.REP.data), each followed through the
inline chain of its address (`addr2line -i`: the release profile keeps line tables) to the
innermost frame in `proxy/src`, the code that is running with whatever library code was inlined
into it. Fat LTO inlines most of a call into a few large functions, so `perf report`'s symbols
say little; the inline chain says which source file and function the time was spent for.

Usage: python3 bench/perf_by_source.py BINARY CALLS DATA...   (CALLS: the checked calls of the
samples, the sum of the label's lines of OUT/calls.txt; FREQ, the sampling rate, 4000 as in
proxy_perf_profile.sh)

Prints, in µs per call: the samples outside the binary (kernel, libc, vDSO), the innermost
crate or file, the innermost proxy function and file, and the outermost function of the samples
that no proxy frame reaches (the runtime, hyper's parser, the allocator)."""

import collections
import os
import re
import subprocess
import sys

FREQ = float(os.environ.get("FREQ", "4000"))


def symbol_addresses(binary):
    """Mangled name -> address in the binary (nm), to turn perf's `sym+off` into an address."""
    out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    return {parts[2]: int(parts[0], 16) for parts in (line.split() for line in out.splitlines()) if len(parts) == 3}


def sampled_addresses(datas, binary, symbols):
    """Counter of addresses in the binary, and Counter of the other samples by where they fell."""
    inside, outside = collections.Counter(), collections.Counter()
    base = os.path.basename(binary)
    for data in datas:
        out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym,symoff,dso", "--no-demangle"],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            match = re.match(r"\s*[0-9a-f]+\s+(\S+)\+0x([0-9a-f]+)\s+\((.*)\)", line)
            if match and match[3].endswith(base) and match[1] in symbols:
                inside[symbols[match[1]] + int(match[2], 16)] += 1
            else:
                dso = match[3] if match else "?"
                outside["kernel" if "kernel" in dso else os.path.basename(dso)] += 1
    return inside, outside


def inline_chains(binary, addresses):
    """Address -> [(function, file:line)], innermost first (addr2line -a -f -i -C)."""
    out = subprocess.run(["addr2line", "-a", "-f", "-i", "-C", "-e", binary],
                         input="\n".join(hex(a) for a in addresses),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    chains, current, i = {}, None, 0
    while i < len(out):
        if out[i].startswith("0x"):
            current = int(out[i], 16)
            chains[current] = []
            i += 1
        else:
            chains[current].append((out[i], out[i + 1] if i + 1 < len(out) else "?"))
            i += 2
    return chains


def origin(location):
    """The crate (registry), standard library part, proxy source file, or path of a location."""
    for pattern, label in ((r"registry/src/[^/]+/([^/]+?)-\d[^/]*/", "{}"),
                           (r"/library/([^/]+)/", "std:{}"),
                           (r"proxy/src/([^:]+)", "proxy/src/{}")):
        match = re.search(pattern, location)
        if match:
            return label.format(match[1])
    return location.split(":")[0][-60:]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    binary, calls, datas = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    inside, outside = sampled_addresses(datas, binary, symbol_addresses(binary))
    chains = inline_chains(binary, list(inside))
    by_origin, by_function, by_file, unreached = (collections.Counter() for _ in range(4))
    for address, count in inside.items():
        chain = chains.get(address) or [("?", "?")]
        by_origin[origin(chain[0][1])] += count
        own = next(((function, origin(location)) for function, location in chain if "proxy/src" in location), None)
        if own:
            by_function[f"{own[0][:110]} ({own[1]})"] += count
            by_file[own[1]] += count
        else:
            unreached[chain[-1][0][:110]] += count
    scale = 1e6 / FREQ / calls
    total = sum(inside.values()) + sum(outside.values())
    print(f"{total} samples, {total * scale:.2f} µs per call")
    for title, counter, top in (("outside the binary", outside, 8), ("innermost crate or file", by_origin, 30),
                                ("innermost proxy file (with what is inlined into it)", by_file, 45),
                                ("innermost proxy function", by_function, 40),
                                ("reached from no proxy frame: outermost function", unreached, 30)):
        print(f"\n## {title}")
        for name, count in counter.most_common(top):
            print(f"  {count * scale:7.2f}  {name}")


if __name__ == "__main__":
    main()
