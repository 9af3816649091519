//! The OAuth-protected legacy server (`tests/sdk-servers/python/protected_server.py`, the
//! Python SDK's `TokenVerifier` + `AuthSettings`, two users) as a child process, in the venv of
//! [`super::python`], killed on drop. Its output is printed if a test fails.

use std::process::{Child, Command, Stdio};

use super::python::{free_port, kill_and_reap, legacy_sse_python_async, wait_ready, Logs};
use crate::workspace_root;

/// The script, relative to the workspace root.
const SCRIPT: &str = "tests/sdk-servers/python/protected_server.py";

/// The bearer tokens the server accepts, and the users they belong to.
pub const ALICE_TOKEN: &str = "alice-token";
pub const BOB_TOKEN: &str = "bob-token";

#[derive(Debug)]
pub struct ProtectedServer {
    child: Child,
    url: String,
    logs: Logs,
}

impl ProtectedServer {
    /// Starts the server on a free port with `AuthSettings.resource_server_url` = its own URL
    /// (`http://127.0.0.1:PORT/mcp`, the legacy server's internal address: a proxy in front
    /// rewrites it with `--public-url`), and waits until it answers.
    pub async fn start() -> ProtectedServer {
        let python = legacy_sse_python_async().await;
        let logs = Logs::default();
        for attempt in 1..=3 {
            let port = free_port();
            let url = format!("http://127.0.0.1:{port}/mcp");
            let mut command = Command::new(&python);
            command
                .arg(workspace_root().join(SCRIPT))
                .args(["--port", &port.to_string(), "--resource-url", &url])
                .env("PYTHONUNBUFFERED", "1")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = command
                .spawn()
                .unwrap_or_else(|e| panic!("cannot spawn {command:?}: {e}"));
            logs.pump(child.stdout.take().expect("piped stdout"));
            logs.pump(child.stderr.take().expect("piped stderr"));
            match wait_ready(&url, "streamable-http", &mut child).await {
                Ok(()) => return ProtectedServer { child, url, logs },
                Err(why) if attempt < 3 && why.starts_with("exited") => {
                    logs.push(format!("==== {why}; trying another port ===="));
                }
                Err(why) => {
                    kill_and_reap(&mut child);
                    logs.dump();
                    panic!("the protected server did not come up at {url}: {why}");
                }
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> &str {
        self.url.trim_end_matches("/mcp")
    }
}

impl Drop for ProtectedServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.logs.dump();
        }
        kill_and_reap(&mut self.child);
    }
}
