//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.2.0-alpha.12, run
//! by Node 22; both installed with npm on first use, see `support::conformance`).
//!
//! - Its 2026-07-28 server scenarios (`--requirements 2026-07-28`) against `mcp-mrtr-proxy` in
//!   front of three legacy backends, over each backend transport: rmcp 2.2
//!   (`tests/conformance-server`), Python FastMCP and the TypeScript SDK (`tests/sdk-servers/`).
//! - Its 2025-11-25 server scenarios against the rmcp backend directly (the backend is a faithful
//!   legacy server, so a failure behind the proxy is the proxy's), and through the proxy over
//!   each backend transport (legacy clients get sessions of their own, relayed).
//!
//! Each run is judged against its expected-failures file in `tests/conformance/` with the suite's
//! own rules: a failure not listed fails the test, and so does a listed check that passes now.
//! The score table is printed and written to `<target>/conformance-results/<run>/score.md`.

use std::path::PathBuf;
use std::time::Duration;

use mcp_migrate_tests::support::conformance::{evaluate, Baseline, Evaluation, Suite, SuiteRun};
use mcp_migrate_tests::support::sdk_servers::{conformance_server_async, LegacySdk};
use mcp_migrate_tests::support::{
    binaries_async, target_dir, within, BackendKind, LegacyHttpServer, ProxyOptions, Stack,
};
use mcp_migrate_tests::workspace_root;

/// How long one suite run may take (it takes seconds; the tasks scenarios poll for a while).
const SUITE_LIMIT: Duration = Duration::from_secs(300);
/// How long a whole test may take once the binaries are built and the suite is installed.
const TEST_LIMIT: Duration = Duration::from_secs(420);

/// Scenarios that must pass in full behind the proxy (no expected failure allowed in them).
const TARGETS: &[&str] = &[
    "input-required-result-",
    "server-stateless",
    "http-header-validation",
    "caching",
    "dns-rebinding-protection",
    "tools-",
    "resources-",
    "prompts-",
];
/// The `input-required-result-*` scenarios of the 2026-07-28 requirement set.
const MRTR_SCENARIOS: usize = 14;

fn baseline(file: &str) -> PathBuf {
    workspace_root().join("tests/conformance").join(file)
}

fn out_dir(run: &str) -> PathBuf {
    target_dir().join("conformance-results").join(run)
}

/// Judges `run` against the baseline `file`, prints and saves the score, and fails the test on
/// an unexpected failure, a stale baseline entry, or a suite that disagrees.
fn judge(title: &str, run: &SuiteRun, file: &str) -> Evaluation {
    let baseline_path = baseline(file);
    let evaluation = evaluate(&run.scenarios, &Baseline::load(&baseline_path));
    let total = evaluation.totals();
    let report = format!(
        "## {title}\n\n{} scenarios, {}/{} checks passed, {} expected failures ({}), suite run {:.1?}\n\n{}",
        run.scenarios.len(),
        total.passed,
        total.total(),
        total.expected,
        baseline_path.display(),
        run.elapsed,
        evaluation.report()
    );
    println!("{report}");
    let _ = std::fs::write(run.out.join("score.md"), &report);
    let details = format!(
        "the suite's output and results are in {} (suite.stdout.txt, results/*/checks.json)",
        run.out.display()
    );
    assert!(
        !run.scenarios.is_empty(),
        "{title}: the suite ran no scenario ({}; {details})\n{}\n{}",
        run.exit_status,
        run.stdout,
        run.stderr
    );
    assert!(
        evaluation.is_clean(),
        "{title}: unexpected conformance failures or stale baseline entries; {details}\n\n{report}"
    );
    // The suite judges its scored scenarios against the same file; it must agree.
    assert!(
        run.exit_ok,
        "{title}: our evaluation is clean but the suite exited with {}; {details}\n{}",
        run.exit_status,
        tail(&run.stdout, 60)
    );
    evaluation
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The 2026-07-28 server scenarios against the proxy in front of the conformance backend built
/// on `sdk`.
async fn through_the_proxy(sdk: LegacySdk, kind: BackendKind) {
    binaries_async().await;
    let suite = Suite::install_async().await;
    let backend = conformance_server_async(sdk).await;
    let transport = match kind {
        BackendKind::Http => "http",
        BackendKind::Stdio => "stdio",
    };
    let name = match sdk {
        // The rmcp runs keep their historical result folders.
        LegacySdk::Rmcp => format!("2026-07-28-proxy-{transport}-backend"),
        _ => format!("2026-07-28-proxy-{}-{transport}-backend", sdk.name()),
    };
    let name = name.as_str();
    within(TEST_LIMIT, name, async {
        // Default flags, as users run it: the suite leaves seven paused calls behind (scenarios
        // that never retry); on stdio they stay parked on the children that run the next calls.
        let options = backend.into_options(ProxyOptions::default());
        let stack = Stack::start(kind, options).await;
        let baseline_file = match sdk {
            LegacySdk::Python => "expected-failures-python.yml",
            LegacySdk::Rmcp | LegacySdk::TypeScript => "expected-failures.yml",
        };
        let run = suite
            .run_server(
                stack.proxy.url(),
                "2026-07-28",
                &baseline(baseline_file),
                &out_dir(name),
                SUITE_LIMIT,
            )
            .await;
        let evaluation = judge(name, &run, baseline_file);

        // The scenarios the proxy is measured by ran, and passed without excuses.
        let mrtr = evaluation
            .scores
            .keys()
            .filter(|s| s.starts_with("input-required-result-"))
            .count();
        assert_eq!(mrtr, MRTR_SCENARIOS, "{:?}", evaluation.scores.keys());
        for target in TARGETS {
            let matching: Vec<_> = evaluation
                .scores
                .iter()
                .filter(|(scenario, _)| scenario.starts_with(target))
                .collect();
            assert!(!matching.is_empty(), "no scenario `{target}*` ran");
            for (scenario, score) in matching {
                assert!(
                    score.expected == 0 && score.unexpected == 0 && score.passed > 0,
                    "{scenario} must pass in full: {score:?}"
                );
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_passes_the_2026_07_28_server_scenarios_over_an_http_backend() {
    through_the_proxy(LegacySdk::Rmcp, BackendKind::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_passes_the_2026_07_28_server_scenarios_over_a_stdio_backend() {
    through_the_proxy(LegacySdk::Rmcp, BackendKind::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_passes_the_2026_07_28_server_scenarios_in_front_of_python_over_http() {
    through_the_proxy(LegacySdk::Python, BackendKind::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_passes_the_2026_07_28_server_scenarios_in_front_of_python_over_stdio() {
    through_the_proxy(LegacySdk::Python, BackendKind::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_passes_the_2026_07_28_server_scenarios_in_front_of_typescript_over_http() {
    through_the_proxy(LegacySdk::TypeScript, BackendKind::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_passes_the_2026_07_28_server_scenarios_in_front_of_typescript_over_stdio() {
    through_the_proxy(LegacySdk::TypeScript, BackendKind::Stdio).await;
}

/// The 2025-11-25 server scenarios against `url`, judged by the legacy baseline (no expected
/// failure); the scenarios that exercise sessions and server requests must have run.
async fn legacy_scenarios(name: &str, url: &str) {
    let suite = Suite::install_async().await;
    let run = suite
        .run_server(
            url,
            "2025-11-25",
            &baseline("expected-failures-2025-11-25.yml"),
            &out_dir(name),
            SUITE_LIMIT,
        )
        .await;
    let evaluation = judge(name, &run, "expected-failures-2025-11-25.yml");
    for scenario in [
        "server-initialize",
        "tools-call-sampling",
        "tools-call-elicitation",
        "resources-subscribe",
    ] {
        assert!(
            evaluation.scores.contains_key(scenario),
            "{scenario} did not run"
        );
    }
}

/// The 2025-11-25 server scenarios against the conformance backend alone (legacy Streamable
/// HTTP, sessions): it is a faithful legacy server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_legacy_backend_passes_the_2025_11_25_server_scenarios_directly() {
    let binaries = binaries_async().await;
    Suite::install_async().await;
    let name = "2025-11-25-legacy-backend-direct";
    within(TEST_LIMIT, name, async {
        let server = LegacyHttpServer::start_binary(&binaries.conformance_server).await;
        legacy_scenarios(name, server.url()).await;
    })
    .await;
}

/// The 2025-11-25 server scenarios through the proxy: legacy clients get a session of their own,
/// relayed to the conformance backend (over each backend transport), judged by the same baseline
/// as the backend alone.
async fn legacy_scenarios_through_the_proxy(kind: BackendKind) {
    let binaries = binaries_async().await;
    Suite::install_async().await;
    let name = match kind {
        BackendKind::Http => "2025-11-25-proxy-http-backend",
        BackendKind::Stdio => "2025-11-25-proxy-stdio-backend",
    };
    within(TEST_LIMIT, name, async {
        let options = ProxyOptions {
            legacy_binary: Some(binaries.conformance_server.clone()),
            ..ProxyOptions::default()
        };
        let stack = Stack::start(kind, options).await;
        legacy_scenarios(name, stack.proxy.url()).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_passes_the_2025_11_25_server_scenarios_over_an_http_backend() {
    legacy_scenarios_through_the_proxy(BackendKind::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_passes_the_2025_11_25_server_scenarios_over_a_stdio_backend() {
    legacy_scenarios_through_the_proxy(BackendKind::Stdio).await;
}
