//! `cargo-mcp-lint`, run as `cargo mcp-lint` or directly. Exit codes: 0 when nothing is at error
//! severity (or `--exit-zero`), 1 when something is, 2 for usage, configuration or internal
//! errors. A closed output pipe (`| head`) exits 0: the reader chose to stop.

/// syn allocates a node per token: mimalloc makes a whole-tree lint about a fifth faster than the
/// system allocator (see bench/README.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cargo_mcp_lint::cli::main()
}
