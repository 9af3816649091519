//! `mcp-mrtr-proxy`: see the README. Exit codes: 0 after a clean shutdown, 2 for usage and
//! start-up errors (bad flags, unusable store or key, listen address taken).

use mcp_mrtr_proxy::config;

// The system allocator, on purpose: with mimalloc the soak test's proxy settled 20 MiB above
// its baseline (69.6 → 90.0 MiB in 45 s) against 4 MiB with glibc (49.3 → 53.6 MiB), same code
// and load; a proxy that runs for months must give memory back. See bench/PROXY.md.

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
