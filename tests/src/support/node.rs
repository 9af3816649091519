//! The legacy TypeScript server (`tests/legacy-ts-server`, the official TypeScript SDK 1.x over
//! Streamable HTTP) as a child process, and the `node_modules` it runs with.
//!
//! The packages are installed once into `<target>/legacy-ts-node` with `npm install` from the
//! server's `package.json` (the SDK pinned, its dependencies floating); a marker file holds the
//! `package.json` it was installed from, so later runs skip npm, and a lock file keeps two test
//! processes from installing at the same time. The system `node` runs the server (Node >= 18).

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::OnceLock;
use std::time::Duration;

use super::build::target_dir;
use super::command::{run_captured, RunError};
use super::process::{kill_and_reap, spawn_listening, Logs};
use super::python::InstallLock;
use crate::workspace_root;

/// The install folder under the cargo target directory.
const INSTALL_DIR: &str = "legacy-ts-node";
/// The server's folder, relative to the workspace root.
const SERVER_DIR: &str = "tests/legacy-ts-server";
/// Holds the `package.json` the install was made from; written last.
const MARKER: &str = "mcp-migrate-package.json";
/// How long `npm install` may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

/// The folder holding `server.mjs`, `package.json` and `node_modules/`, installed once per test
/// process. Panics with npm's output when that fails. Blocking.
pub fn legacy_ts_dir() -> PathBuf {
    static PREPARED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PREPARED.get_or_init(|| prepare(&target_dir().join(INSTALL_DIR))) {
        Ok(dir) => dir.clone(),
        Err(why) => panic!("{why}"),
    }
}

fn ready(dir: &Path, package: &str) -> bool {
    dir.join("node_modules/@modelcontextprotocol/sdk/package.json")
        .exists()
        && std::fs::read_to_string(dir.join(MARKER)).is_ok_and(|text| text == package)
}

fn prepare(dir: &Path) -> Result<PathBuf, String> {
    let source = workspace_root().join(SERVER_DIR);
    let package = std::fs::read_to_string(source.join("package.json"))
        .map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    let copy_server = |dir: &Path| {
        std::fs::copy(source.join("server.mjs"), dir.join("server.mjs"))
            .map(|_| ())
            .map_err(|e| format!("cannot copy server.mjs into {}: {e}", dir.display()))
    };
    if ready(dir, &package) {
        copy_server(dir)?;
        return Ok(dir.to_owned());
    }
    let parent = dir
        .parent()
        .ok_or_else(|| format!("{} has no parent", dir.display()))?;
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let _lock = InstallLock::acquire(&parent.join(format!("{INSTALL_DIR}.lock")))?;
    if !ready(dir, &package) {
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .map_err(|e| format!("cannot remove the old {}: {e}", dir.display()))?;
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        std::fs::write(dir.join("package.json"), &package)
            .map_err(|e| format!("cannot write package.json: {e}"))?;
        let npm = std::env::var_os("NPM").unwrap_or_else(|| "npm".into());
        let mut install = Command::new(&npm);
        install
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(dir);
        run_captured(&mut install, INSTALL_TIMEOUT).map_err(|error| match error {
            RunError::Spawn(e) => format!(
                "the legacy TypeScript server needs npm (and node) on PATH, but {npm:?} cannot run: {e}"
            ),
            RunError::Failed {
                why,
                stdout,
                stderr,
            } => format!(
                "`npm install` failed ({why}) in {} (is the npm registry reachable?)\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
                dir.display()
            ),
        })?;
        let staging = dir.join(format!("{MARKER}.{}", std::process::id()));
        std::fs::write(&staging, &package)
            .and_then(|()| std::fs::rename(&staging, dir.join(MARKER)))
            .map_err(|e| format!("cannot write the marker in {}: {e}", dir.display()))?;
    }
    copy_server(dir)?;
    Ok(dir.to_owned())
}

/// `node server.mjs --port 0` (TypeScript SDK 1.x, Streamable HTTP), killed on drop. Its output is
/// kept and printed if a test fails.
#[derive(Debug)]
pub struct LegacyTsServer {
    child: Child,
    url: String,
    logs: Logs,
}

impl LegacyTsServer {
    /// Installs the packages (once per process), starts the server on a free port and waits for
    /// its `listening on` line.
    pub async fn start() -> LegacyTsServer {
        let dir = tokio::task::spawn_blocking(legacy_ts_dir)
            .await
            .expect("preparing the legacy TypeScript server panicked");
        let node = std::env::var_os("NODE").unwrap_or_else(|| "node".into());
        let mut command = Command::new(node);
        command
            .arg(dir.join("server.mjs"))
            .args(["--port", "0"])
            .current_dir(&dir);
        let logs = Logs::default();
        let (child, url) = spawn_listening(command, "the legacy TypeScript server", &logs).await;
        LegacyTsServer { child, url, logs }
    }

    /// `http://127.0.0.1:PORT/mcp`
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for LegacyTsServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.logs.dump("the legacy TypeScript server");
        }
        kill_and_reap(&mut self.child);
    }
}
