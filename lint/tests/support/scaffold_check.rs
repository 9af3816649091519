//! The crate the scaffold tests generate: its manifest (rmcp 3 and what fixtures use) and its
//! `cargo check` in its own target directory under the workspace's `target/` (kept between runs,
//! so only the first run builds rmcp 3's dependencies).

use std::path::Path;
use std::process::Command;

const MANIFEST: &str = include_str!("scaffold-check.toml");

/// `cargo check` of the generated crate in `dir` (its `src/` written) against rmcp 3, with the
/// workspace's lock file (the same rmcp 3 and dependencies the repository uses).
pub fn check(dir: &Path) -> std::process::Output {
    let root = mcp_migrate_workspace_bins::workspace_root(env!("CARGO_MANIFEST_DIR"));
    std::fs::write(dir.join("Cargo.toml"), MANIFEST).unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    Command::new(cargo)
        .args(["check", "--quiet", "--message-format", "short"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", root.join("target/scaffold-check"))
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap()
}
