//! The stdio front (`mcp-mrtr-proxy --stdio`): 2026-07-28 newline-delimited JSON-RPC on the
//! proxy's own stdin/stdout, in front of the legacy stdio fixture server.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use mcp_migrate_tests::support::binaries;
use serde_json::{json, Value};

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    })
}

#[test]
fn a_full_mrtr_round_over_the_stdio_front() {
    let binaries = binaries();
    let store = tempfile::tempdir().unwrap();
    let mut child = Command::new(&binaries.proxy)
        .args(["--stdio", "--store"])
        .arg(store.path())
        .arg("--")
        .arg(&binaries.legacy_server)
        .args(["--transport", "stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the proxy starts");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines_tx, lines) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let value: Value = serde_json::from_str(&line).expect("one JSON message per line");
            if lines_tx.send(value).is_err() {
                break;
            }
        }
    });
    let send = |stdin: &mut std::process::ChildStdin, message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    let receive = |id: i64| -> Value {
        loop {
            let message = lines
                .recv_timeout(Duration::from_secs(60))
                .expect("an answer within 60 s");
            if message["id"] == id {
                return message;
            }
        }
    };

    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}),
    );
    let discover = receive(1);
    assert_eq!(
        discover["result"]["supportedVersions"],
        json!(["2026-07-28"]),
        "{discover}"
    );

    let call = json!({"name": "ask_name", "arguments": {}, "_meta": meta()});
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}),
    );
    let first = receive(2);
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let key = first["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let mut retry = call.clone();
    retry["inputResponses"] = json!({ key: {"action": "accept", "content": {"name": "Stdio"}} });
    retry["requestState"] = first["result"]["requestState"].clone();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": retry}),
    );
    let done = receive(3);
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Stdio!",
        "{done}"
    );

    // Invalid input gets an error line, not silence or a crash.
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}),
    );
    let invalid = receive(4);
    assert_eq!(invalid["error"]["code"], -32602, "{invalid}");

    drop(stdin);
    let status = child.wait().expect("the proxy exits after EOF on stdin");
    assert!(status.success(), "{status:?}");
}
