//! `--command`: the peer is a process spoken to over stdio (newline-delimited JSON-RPC), as a
//! client that launches a local server does: the legacy server itself (`stdio-direct`: one
//! `initialize`, then legacy `tools/call`), or a stdio MRTR bridge in front of one (`stdio`:
//! 2026-07-28 `tools/call` with `_meta`, no handshake), e.g. `mcp-mrtr-proxy --stdio -- CMD` or
//! `mcp-uplift -- CMD`. One process serves every connection: a stdio peer has one pipe, so the
//! connections are concurrent requests on it, matched to their answers by id.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::oneshot;

type Waiters = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

#[derive(Debug)]
pub(crate) struct StdioPeer {
    stdin: tokio::sync::Mutex<ChildStdin>,
    waiters: Waiters,
    pid: u32,
    /// Killed when the peer is dropped (`kill_on_drop`).
    _child: Child,
}

impl StdioPeer {
    /// Starts `command` (stderr inherited); `legacy`: `initialize` + `notifications/initialized`.
    pub(crate) async fn spawn(command: &[String], legacy: bool) -> Result<Arc<Self>, String> {
        let (program, args) = command
            .split_first()
            .ok_or("--command is empty".to_owned())?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| format!("cannot start `{program}`: {error}"))?;
        let pid = child.id().ok_or("the peer exited at once")?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let waiters = Waiters::default();
        tokio::spawn(read_answers(stdout, Arc::clone(&waiters)));
        let peer = Arc::new(StdioPeer {
            stdin: tokio::sync::Mutex::new(stdin),
            waiters,
            pid,
            _child: child,
        });
        if legacy {
            let params = json!({
                "protocolVersion": super::LEGACY_VERSION,
                "capabilities": {},
                "clientInfo": { "name": "proxy_load", "version": "0" }
            });
            // An id no connection uses (theirs are `task << 32 | n` with small `n`), and exact in a
            // JavaScript number.
            let answer = peer
                .request(u64::from(u32::MAX), "initialize", params)
                .await?;
            super::success(&answer, "initialize")?;
            peer.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
                .await?;
        }
        Ok(peer)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The peer's child processes (a bridge's legacy server), from `/proc` (Linux).
    pub(crate) fn children(&self) -> Vec<u32> {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.pid)) else {
            return Vec::new();
        };
        tasks
            .flatten()
            .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
            .flat_map(|list| {
                list.split_whitespace()
                    .filter_map(|pid| pid.parse().ok())
                    .collect::<Vec<u32>>()
            })
            .collect()
    }

    /// Sends a request and waits for the answer with its id (`id` unique among those in flight).
    pub(crate) async fn request(
        &self,
        id: u64,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let (sender, answer) = oneshot::channel();
        self.lock().insert(id, sender);
        let sent = self
            .send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        if let Err(error) = sent {
            self.lock().remove(&id);
            return Err(error);
        }
        answer
            .await
            .map_err(|_| format!("{method}: the peer's stdout closed"))
    }

    async fn send(&self, message: &Value) -> Result<(), String> {
        let mut line = serde_json::to_vec(message).map_err(|error| error.to_string())?;
        line.push(b'\n');
        let mut stdin = self.stdin.lock().await;
        stdin
            .write_all(&line)
            .await
            .map_err(|error| format!("writing to the peer: {error}"))?;
        stdin
            .flush()
            .await
            .map_err(|error| format!("writing to the peer: {error}"))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Value>>> {
        self.waiters
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

/// Hands every answer to its waiter; notifications and server requests are skipped (the echo
/// tool sends none). When stdout ends, every waiter is dropped (its request fails).
async fn read_answers(stdout: ChildStdout, waiters: Waiters) {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            eprintln!(
                "the stdio peer wrote a line that is not JSON: {}",
                super::excerpt(&line)
            );
            continue;
        };
        if message.get("method").is_some() {
            continue;
        }
        let Some(id) = message.get("id").and_then(Value::as_u64) else {
            continue;
        };
        let waiter = waiters
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .remove(&id);
        if let Some(waiter) = waiter {
            let _ = waiter.send(message);
        }
    }
    waiters
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .clear();
}
