//! `mcp-mrtr-proxy`: see the README. Exit codes: 0 after a clean shutdown, 2 for usage and
//! start-up errors (bad flags, unusable store or key, listen address taken).

use mcp_mrtr_proxy::config;

/// Every proxied call allocates a few dozen small buffers (JSON values, headers, channels):
/// mimalloc costs less per allocation than glibc's malloc (see bench/PROXY.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let args = match config::load(std::env::args_os(), std::env::var_os(config::CONFIG_ENV)) {
        Ok(args) => args,
        Err(config::LoadError::Cli(error)) => error.exit(),
        Err(config::LoadError::File(message)) => {
            eprintln!("error: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    // Dropped last, outside the runtime: flushes the OpenTelemetry exporter.
    let _telemetry = match mcp_mrtr_proxy::telemetry::init(&args.telemetry()) {
        Ok(guard) => guard,
        Err(error) => {
            eprintln!("error: {error:#}");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: could not start the async runtime: {error}");
            return std::process::ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(mcp_mrtr_proxy::run(args));
    // Background tasks end with the runtime, before the exporter flushes.
    drop(runtime);
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::from(2)
        }
    }
}
