//! What the binary's end-to-end tests share: where the workspace is and how the linter runs.
// Each test binary includes this module and uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The root of the mcp-migrate workspace.
pub fn workspace_root() -> PathBuf {
    mcp_migrate_workspace_bins::workspace_root(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `cargo-mcp-lint ARGS` in `dir`, without colours.
pub fn lint_in(dir: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-mcp-lint"));
    command.args(args).current_dir(dir).env("NO_COLOR", "1");
    command
        .output()
        .unwrap_or_else(|e| panic!("{}", mcp_migrate_workspace_bins::spawn_error(&command, &e)))
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}
