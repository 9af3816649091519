//! `mcp-mrtr-proxy`: see the README. Exit codes: 0 after a clean shutdown, 2 for usage and
//! start-up errors (bad flags, unusable store or key, listen address taken).

use clap::Parser;

/// Every proxied call allocates a few dozen small buffers (JSON values, headers, channels):
/// mimalloc costs less per allocation than glibc's malloc (see bench/PROXY.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let args = mcp_mrtr_proxy::config::Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: could not start the async runtime: {error}");
            return std::process::ExitCode::from(2);
        }
    };
    match runtime.block_on(mcp_mrtr_proxy::run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::from(2)
        }
    }
}
