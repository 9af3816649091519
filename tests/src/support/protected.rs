//! The OAuth-protected legacy servers as child processes, killed on drop (their output is
//! printed if a test fails): the Python SDK's own auth (`TokenVerifier` + `AuthSettings`,
//! `tests/sdk-servers/python/protected_server.py`, in the venv of [`super::python`]) and the
//! TypeScript SDK 1.x bearer-auth middleware (`requireBearerAuth` + the metadata router,
//! `tests/sdk-servers/typescript/protected-server.mjs`, on the Node of
//! [`super::sdk_servers`]). Both accept the same two users' tokens.

use std::process::{Child, Command, Stdio};

use super::python::{free_port, kill_and_reap, legacy_sse_python_async, wait_ready, Logs};
use crate::workspace_root;

/// The Python script, relative to the workspace root.
const PYTHON_SCRIPT: &str = "tests/sdk-servers/python/protected_server.py";

/// Which SDK protects the legacy server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthSdk {
    Python,
    TypeScript,
}

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
    pub async fn start(sdk: AuthSdk) -> ProtectedServer {
        Self::start_with(sdk, &[]).await
    }

    /// [`start`](Self::start) with more arguments for the server, e.g. the Python server's
    /// `--jwks FILE --issuer ISS --audience AUD` (JWTs instead of the two fixed tokens).
    pub async fn start_with(sdk: AuthSdk, extra: &[String]) -> ProtectedServer {
        let (program, script) = match sdk {
            AuthSdk::Python => (
                legacy_sse_python_async().await,
                workspace_root().join(PYTHON_SCRIPT).into_os_string(),
            ),
            AuthSdk::TypeScript => {
                let mut command = tokio::task::spawn_blocking(|| {
                    super::sdk_servers::typescript_script("protected-server.mjs")
                })
                .await
                .expect("preparing the TypeScript SDK panicked");
                (command.program, command.args.remove(0))
            }
        };
        let logs = Logs::default();
        for attempt in 1..=3 {
            let port = free_port();
            let url = format!("http://127.0.0.1:{port}/mcp");
            let mut command = Command::new(&program);
            command
                .arg(&script)
                .args(["--port", &port.to_string(), "--resource-url", &url])
                .args(extra)
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
