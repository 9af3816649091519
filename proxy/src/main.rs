//! `mcp-mrtr-proxy`: see the README. Exit codes: 0 after a clean shutdown, 2 for usage and
//! start-up errors (bad flags, unusable store or key, listen address taken).

use mcp_mrtr_proxy::backend::child_guard;
use mcp_mrtr_proxy::config;

// jemalloc: glibc malloc was about a fifth of the proxy's instructions per call; jemalloc cuts
// the instructions per pass-through call by 16 % and, unlike mimalloc, gives memory back (soak
// test: +2.9 MiB RSS over 45 s with jemalloc, +4.3 MiB with glibc, +20 MiB with mimalloc).
// Its background threads (proxy/Cargo.toml) return a burst's freed pages while the proxy idles.
// See bench/PROXY.md.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    // A legacy stdio child on its way to `exec` (backend/child_guard.rs): nothing else runs.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = child_guard::trampoline_main(&argv) {
        return code;
    }
    child_guard::enable();
    let args = match config::load(argv, std::env::var_os(config::CONFIG_ENV)) {
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::from(args.worker_threads))
        .enable_all()
        .build();
    let runtime = match runtime {
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
