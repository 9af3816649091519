//! Legacy servers built on the other official SDKs, beside the rmcp fixtures: a Python FastMCP
//! (`mcp` 1.30.0) and a TypeScript SDK (`@modelcontextprotocol/sdk` 1.32.2) conformance server
//! (`tests/sdk-servers/`), each with the fixture's command line (`--transport stdio`,
//! `--transport http --listen ADDR` printing `listening on http://ADDR/mcp`).
//!
//! Installed once per run and shared by every test binary:
//! - Python: the venv of [`super::python`] (the same `mcp==1.30.0` requirement);
//! - TypeScript: `npm install @modelcontextprotocol/sdk@1.32.2` into `<target>/sdk-servers-node`,
//!   run by the Node 22 that the conformance suite installs ([`Suite::install`]). ES modules
//!   resolve packages next to the script, so the script is copied into that folder.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use super::build::target_dir;
use super::command::{run_captured, RunError};
use super::conformance::Suite;
use super::python::{legacy_sse_python, InstallLock};
use super::ProxyOptions;
use crate::workspace_root;

/// The TypeScript SDK release the TypeScript server runs on (the last 1.x).
pub const TS_SDK_VERSION: &str = "1.32.2";
const TS_SDK_PACKAGE: &str = "@modelcontextprotocol/sdk";
const NODE_DIR: &str = "sdk-servers-node";
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

/// The SDK a legacy server is built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacySdk {
    /// rmcp 2.2 (the workspace's own fixtures).
    Rmcp,
    /// Python `mcp` 1.30.0, FastMCP.
    Python,
    /// TypeScript `@modelcontextprotocol/sdk` 1.32.2.
    TypeScript,
}

impl LegacySdk {
    pub const ALL: [LegacySdk; 3] = [LegacySdk::Rmcp, LegacySdk::Python, LegacySdk::TypeScript];

    pub fn name(self) -> &'static str {
        match self {
            LegacySdk::Rmcp => "rmcp",
            LegacySdk::Python => "python",
            LegacySdk::TypeScript => "typescript",
        }
    }
}

/// How to start a legacy server: `program args...` followed by the fixture's command line.
#[derive(Debug, Clone)]
pub struct LegacyCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl LegacyCommand {
    /// `options` with this server as the legacy backend.
    pub fn into_options(self, options: ProxyOptions) -> ProxyOptions {
        ProxyOptions {
            legacy_binary: Some(self.program),
            legacy_args: self.args,
            ..options
        }
    }
}

/// The conformance server of `sdk` (installing its SDK on first use). Blocking.
pub fn conformance_server(sdk: LegacySdk) -> LegacyCommand {
    match sdk {
        LegacySdk::Rmcp => LegacyCommand {
            program: super::binaries().conformance_server,
            args: Vec::new(),
        },
        LegacySdk::Python => LegacyCommand {
            program: legacy_sse_python(),
            args: vec![workspace_root()
                .join("tests/sdk-servers/python/conformance_server.py")
                .into()],
        },
        LegacySdk::TypeScript => {
            let dir = typescript_dir();
            LegacyCommand {
                program: Suite::install().node,
                args: vec![dir.join("conformance-server.mjs").into()],
            }
        }
    }
}

/// A script of `tests/sdk-servers/typescript/` run by Node, next to the TypeScript SDK
/// (installing it on first use). Blocking.
pub fn typescript_script(script: &str) -> LegacyCommand {
    LegacyCommand {
        program: Suite::install().node,
        args: vec![typescript_dir().join(script).into()],
    }
}

/// [`conformance_server`] from async code.
pub async fn conformance_server_async(sdk: LegacySdk) -> LegacyCommand {
    tokio::task::spawn_blocking(move || conformance_server(sdk))
        .await
        .expect("preparing a legacy SDK server panicked")
}

/// `<target>/sdk-servers-node` with the TypeScript SDK and the current scripts; once per process.
fn typescript_dir() -> PathBuf {
    static PREPARED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PREPARED.get_or_init(|| prepare_typescript(&target_dir().join(NODE_DIR))) {
        Ok(dir) => dir.clone(),
        Err(why) => panic!("{why}"),
    }
}

fn installed_sdk_version(dir: &Path) -> Option<String> {
    let manifest = dir
        .join("node_modules")
        .join(TS_SDK_PACKAGE)
        .join("package.json");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(manifest).ok()?).ok()?;
    manifest["version"].as_str().map(str::to_owned)
}

fn prepare_typescript(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let _lock = InstallLock::acquire(&dir.with_extension("lock"))?;
    if installed_sdk_version(dir).as_deref() != Some(TS_SDK_VERSION) {
        let npm = std::env::var_os("NPM").unwrap_or_else(|| "npm".into());
        let mut install = Command::new(&npm);
        install
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(dir)
            .arg(format!("{TS_SDK_PACKAGE}@{TS_SDK_VERSION}"));
        run_captured(&mut install, INSTALL_TIMEOUT).map_err(|error| match error {
            RunError::Spawn(e) => format!(
                "the TypeScript legacy server needs npm on PATH to install \
                 {TS_SDK_PACKAGE}@{TS_SDK_VERSION}, but {npm:?} cannot run: {e}"
            ),
            RunError::Failed {
                why,
                stdout,
                stderr,
            } => format!(
                "`npm install {TS_SDK_PACKAGE}@{TS_SDK_VERSION}` failed ({why}; is the npm \
                 registry reachable?)\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
            ),
        })?;
    }
    // The scripts import the SDK by package name: they must sit next to its node_modules.
    let sources = workspace_root().join("tests/sdk-servers/typescript");
    let entries = std::fs::read_dir(&sources)
        .map_err(|e| format!("cannot read {}: {e}", sources.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "mjs") {
            let target = dir.join(entry.file_name());
            std::fs::copy(&path, &target).map_err(|e| {
                format!(
                    "cannot copy {} to {}: {e}",
                    path.display(),
                    target.display()
                )
            })?;
        }
    }
    Ok(dir.to_owned())
}
