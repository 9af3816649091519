//! `mcp-lint`: the same linter under the name the Python and npm packages put on the PATH
//! (docs/lint/install.md). Options, output and exit codes are those of `cargo-mcp-lint`.

/// The same allocator as `cargo-mcp-lint` (src/main.rs), for the same speed.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cargo_mcp_lint::cli::main_as(cargo_mcp_lint::cli::Program::Standalone)
}
