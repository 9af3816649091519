#!/usr/bin/env python3
"""How long a resumption waits behind a call running on its own stdio child.

A stdio child runs one call at a time and holds any number of paused calls
(docs/proxy/paused-calls.md, "stdio: many paused calls per child, one running"). A retry of a
paused call therefore waits for the call running on its child, if any, to finish or pause. This
script measures that wait with a real legacy server (the Python SDK fixture
tests/legacy-sse-server/server.py over stdio) behind `mcp-mrtr-proxy` at default flags but the
pool size:

- idle:     a paused `ask_name` is retried while nothing else runs;
- behind:   it is retried while `slow_count` (n progress steps of 20 ms) runs on the same child
            (`--pool-size 1`: the only child);
- spread:   the same with the default `--pool-size` (4): the pool puts the new call on the child
            with the fewest paused calls, so the retry does not wait.

Usage: bench/resume_behind_running.py PROXY PYTHON [ROUNDS] [N]
  PROXY   the proxy binary (target/release/mcp-mrtr-proxy)
  PYTHON  a python with the `mcp` 1.x SDK (the tests build one: target/legacy-sse-venv/bin/python)
Prints one line per case: median and max retry latency in ms over ROUNDS (default 15).
"""

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "tests", "legacy-sse-server", "server.py")
CAPABILITIES = {"elicitation": {"form": {}}}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, method, params, timeout=120):
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
    }
    params = dict(params)
    params["_meta"] = {**params.get("_meta", {}), **meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    }
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    request = urllib.request.Request(url, data=body, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def start_proxy(proxy, python, pool_size):
    port = free_port()
    store = tempfile.mkdtemp(prefix="resume-bench-")
    args = [proxy, "--listen", f"127.0.0.1:{port}", "--store", store]
    if pool_size is not None:
        args += ["--pool-size", str(pool_size)]
    args += ["--", python, SERVER, "--transport", "stdio"]
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.05)
    else:
        child.kill()
        raise SystemExit("the proxy did not become healthy")
    return child, url + "/mcp"


def pause(url):
    result = post(url, "tools/call", {"name": "ask_name", "arguments": {}})["result"]
    assert result["resultType"] == "input_required", result
    return next(iter(result["inputRequests"])), result["requestState"]


def retry(url, key, state):
    answers = {key: {"action": "accept", "content": {"name": "Ada"}}}
    params = {"name": "ask_name", "arguments": {}, "inputResponses": answers, "requestState": state}
    started = time.monotonic()
    result = post(url, "tools/call", params)["result"]
    elapsed = time.monotonic() - started
    assert result["content"][0]["text"] == "Hello, Ada!", result
    return elapsed


def case(proxy, python, pool_size, slow_steps, rounds):
    child, url = start_proxy(proxy, python, pool_size)
    try:
        # Warm up: the first call of the profile starts its child.
        key, state = pause(url)
        retry(url, key, state)
        waits = []
        for _ in range(rounds):
            key, state = pause(url)
            runner = None
            if slow_steps:
                runner = threading.Thread(
                    target=post,
                    args=(url, "tools/call", {"name": "slow_count", "arguments": {"n": slow_steps}}),
                )
                runner.start()
                time.sleep(0.1)  # let the slow call reach its child before the retry
            waits.append(retry(url, key, state))
            if runner:
                runner.join()
        return waits
    finally:
        child.terminate()
        child.wait()


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    proxy, python = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 50
    print(f"slow_count n={steps} ({steps * 20} ms of work), {rounds} rounds per case")
    for name, pool, slow in [("idle", 1, 0), ("behind", 1, steps), ("spread", None, steps)]:
        waits = [w * 1000 for w in case(proxy, python, pool, slow, rounds)]
        print(
            f"{name:7} pool={pool or 'default'}: retry p50 {statistics.median(waits):7.1f} ms, "
            f"max {max(waits):7.1f} ms"
        )


if __name__ == "__main__":
    main()
