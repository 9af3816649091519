//! Legacy MCP clients on the official SDKs, as child processes: the Python SDK 1.x (`mcp`
//! 1.30.0, the venv of [`super::python`]) and the TypeScript SDK 1.x
//! (`@modelcontextprotocol/sdk` [`TS_SDK_VERSION`] on Node [`NODE_MAJOR`], installed once with
//! npm into `<target>/legacy-ts-client`). Both run `tests/legacy-clients/*_client.*`: they open
//! a legacy session (`initialize`), run the named flows against the legacy fixture server behind
//! the proxy, answer its requests as the client `name` would, and print one JSON report.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use super::build::target_dir;
use super::command::npm_install_into;
use super::python::legacy_sse_python_async;
use crate::workspace_root;

/// The TypeScript SDK release (the last 1.x line, before 2026-07-28).
pub const TS_SDK_VERSION: &str = "1.32.2";
/// Node for the TypeScript client (the npm package `node@22`, as for the conformance suite).
pub const NODE_MAJOR: &str = "22";
/// How long one client run may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// Which SDK the legacy client is built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacySdk {
    Python,
    TypeScript,
}

impl LegacySdk {
    /// The `clientInfo.name` prefix of its clients.
    pub fn prefix(self) -> &'static str {
        match self {
            LegacySdk::Python => "py",
            LegacySdk::TypeScript => "ts",
        }
    }
}

/// Where the client connects.
#[derive(Debug, Clone)]
pub enum LegacyTarget {
    /// Streamable HTTP at this URL.
    Http(String),
    /// A stdio server started with this command line.
    Stdio(Vec<String>),
}

/// One client run.
#[derive(Debug, Clone)]
pub struct LegacyRun {
    pub sdk: LegacySdk,
    pub name: String,
    pub color: String,
    /// Flows, run in order: `ping`, `ask_name`, `ask_twice`, `url`, `summarize`, `roots`,
    /// `logging`, `progress`, `idle` (wait `idle_secs`, then call `echo`).
    pub flows: Vec<&'static str>,
    pub idle_secs: f64,
    /// Flows run in a second, new session after the first one ends.
    pub reconnect_flows: Vec<&'static str>,
    /// A CA certificate (PEM) for an `https://` target: Node trusts it besides its own
    /// (`NODE_EXTRA_CA_CERTS`), Python instead of its bundle (`SSL_CERT_FILE`).
    pub extra_ca_file: Option<PathBuf>,
}

impl LegacyRun {
    pub fn new(sdk: LegacySdk, name: &str, flows: &[&'static str]) -> Self {
        LegacyRun {
            sdk,
            name: name.to_owned(),
            color: format!("{name}-colour"),
            flows: flows.to_vec(),
            idle_secs: 0.0,
            reconnect_flows: Vec::new(),
            extra_ca_file: None,
        }
    }

    /// Runs the client against `target`; panics with its output when it fails.
    pub async fn run(&self, target: &LegacyTarget) -> LegacyReport {
        let (program, script) = match self.sdk {
            LegacySdk::Python => (
                legacy_sse_python_async().await,
                workspace_root().join("tests/legacy-clients/python_client.py"),
            ),
            LegacySdk::TypeScript => {
                let installed = ts_client_async().await;
                (installed.node, installed.script)
            }
        };
        let mut command = tokio::process::Command::new(&program);
        command
            .arg(&script)
            .args(["--name", &self.name, "--color", &self.color])
            .args(["--flows", &self.flows.join(",")])
            .args(["--idle", &self.idle_secs.to_string()])
            .args(["--reconnect-flows", &self.reconnect_flows.join(",")])
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        if let Some(ca) = &self.extra_ca_file {
            command
                .env("NODE_EXTRA_CA_CERTS", ca)
                .env("SSL_CERT_FILE", ca);
        }
        match target {
            LegacyTarget::Http(url) => {
                command.args(["--url", url]);
            }
            LegacyTarget::Stdio(line) => {
                command.arg("--stdio").args(line);
            }
        }
        let output = match tokio::time::timeout(RUN_TIMEOUT, command.output()).await {
            Ok(Ok(output)) => output,
            Ok(Err(e)) => panic!("cannot run the legacy client ({command:?}): {e}"),
            Err(_) => {
                panic!("the legacy client did not finish within {RUN_TIMEOUT:?}: {command:?}")
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let report = stdout
            .lines()
            .rev()
            .find_map(|line| serde_json::from_str::<Value>(line).ok());
        match report {
            Some(report) if output.status.success() => LegacyReport(report),
            _ => panic!(
                "the {:?} legacy client {} failed ({}):\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
                self.sdk, self.name, output.status
            ),
        }
    }
}

/// What a legacy client printed.
#[derive(Debug, Clone)]
pub struct LegacyReport(pub Value);

impl LegacyReport {
    /// The text result of a flow; panics (showing the report) when the flow failed.
    #[track_caller]
    pub fn result(&self, flow: &str) -> &str {
        self.0["results"][flow]
            .as_str()
            .unwrap_or_else(|| panic!("flow {flow} has no result: {:#}", self.0))
    }

    /// The error of a flow, if it failed.
    pub fn error(&self, flow: &str) -> Option<&str> {
        self.0["errors"][flow].as_str()
    }

    /// The server requests the client answered (`{method, params}`), in order.
    pub fn seen(&self) -> &[Value] {
        self.0["seen"].as_array().map_or(&[], Vec::as_slice)
    }

    pub fn logs(&self) -> &[Value] {
        self.0["logs"].as_array().map_or(&[], Vec::as_slice)
    }

    pub fn progress(&self) -> Vec<f64> {
        self.0["progress"]
            .as_array()
            .map(|values| values.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default()
    }

    /// Sessions the client initialized.
    pub fn sessions(&self) -> u64 {
        self.0["sessions"].as_u64().unwrap_or(0)
    }

    /// What the client learnt at `initialize` (protocol version, server info, capabilities).
    pub fn initialize(&self) -> &Value {
        &self.0["initialize"]
    }
}

/// The installed TypeScript client: Node and the script next to its `node_modules`.
#[derive(Debug, Clone)]
pub struct TsClient {
    pub node: PathBuf,
    pub script: PathBuf,
}

/// Installs Node and the SDK into `<target>/legacy-ts-client` (once per process, skipped when
/// they are there at the right versions) and copies the client script next to them (ES modules
/// resolve packages from the script's folder). Panics with npm's output when that fails.
pub fn ts_client() -> TsClient {
    static INSTALLED: OnceLock<Result<TsClient, String>> = OnceLock::new();
    match INSTALLED.get_or_init(|| install_ts(&target_dir().join("legacy-ts-client"))) {
        Ok(client) => client.clone(),
        Err(why) => panic!("{why}"),
    }
}

/// [`ts_client`] from async code.
pub async fn ts_client_async() -> TsClient {
    tokio::task::spawn_blocking(ts_client)
        .await
        .expect("installing the TypeScript client panicked")
}

fn installed_version(dir: &Path, package: &str) -> Option<String> {
    let manifest =
        std::fs::read_to_string(dir.join("node_modules").join(package).join("package.json"))
            .ok()?;
    let manifest: Value = serde_json::from_str(&manifest).ok()?;
    manifest["version"].as_str().map(str::to_owned)
}

fn install_ts(dir: &Path) -> Result<TsClient, String> {
    let installed = |dir: &Path| {
        let sdk = installed_version(dir, "@modelcontextprotocol/sdk");
        let node = installed_version(dir, "node");
        if sdk.as_deref() == Some(TS_SDK_VERSION)
            && node.is_some_and(|v| v.starts_with(&format!("{NODE_MAJOR}.")))
        {
            Ok(dir.join("node_modules/.bin/node"))
        } else {
            Err(format!(
                "no @modelcontextprotocol/sdk@{TS_SDK_VERSION} with node@{NODE_MAJOR} in {}",
                dir.display()
            ))
        }
    };
    let node = npm_install_into(
        dir,
        &[
            format!("node@{NODE_MAJOR}"),
            format!("@modelcontextprotocol/sdk@{TS_SDK_VERSION}"),
        ],
        "the TypeScript legacy client",
        installed,
    )?;
    let source = workspace_root().join("tests/legacy-clients/ts_client.mjs");
    let script = dir.join(format!("ts_client.{}.mjs", std::process::id()));
    std::fs::copy(&source, &script).map_err(|e| {
        format!(
            "cannot copy {} into {}: {e}",
            source.display(),
            dir.display()
        )
    })?;
    Ok(TsClient { node, script })
}
