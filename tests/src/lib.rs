//! End-to-end tests of mcp-migrate live in `tests/tests/`; this library holds shared helpers.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

/// The root of the mcp-migrate workspace.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits inside the workspace")
        .to_path_buf()
}
