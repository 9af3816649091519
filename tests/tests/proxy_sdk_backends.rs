//! The proxy in front of legacy stdio servers built on each SDK (rmcp 2.2, Python FastMCP
//! `mcp` 1.30.0, TypeScript SDK 1.32.2; `support::sdk_servers`), with what differs between them.

use std::time::{Duration, Instant};

use mcp_migrate_tests::support::sdk_servers::{conformance_server_async, LegacySdk};
use mcp_migrate_tests::support::{
    binaries_async, is_alive, within, BackendKind, ProxyOptions, Stack,
};
use serde_json::json;

/// Issue 16: after a SIGKILL of the proxy, the legacy child holding a paused call stayed alive.
/// A TypeScript SDK server does not exit when its stdin closes while it awaits a client answer
/// (the SDK's 60 s request timer keeps Node's event loop alive), so only the kernel can stop it:
/// the proxy starts every child with a parent-death signal. Every child, of every SDK, must die
/// promptly with the proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_outlive_a_killed_proxy() {
    binaries_async().await;
    for sdk in LegacySdk::ALL {
        let backend = conformance_server_async(sdk).await;
        within(Duration::from_secs(120), sdk.name(), async {
            let mut stack = Stack::start(
                BackendKind::Stdio,
                backend.into_options(ProxyOptions::default()),
            )
            .await;
            let paused = stack
                .raw()
                .call_tool("test_input_required_result_elicitation", json!({}))
                .await;
            paused.input_required();
            let children = stack.proxy.backend_pids();
            assert!(
                !children.is_empty(),
                "{}: the proxy runs the legacy server as its child",
                sdk.name()
            );
            stack.proxy.kill_proxy_only();
            // The kernel signals them at once; a loaded 2-core machine may take seconds to run
            // their exit. Children left to live would never die.
            let deadline = Instant::now() + Duration::from_secs(30);
            while children.iter().any(|&pid| is_alive(pid)) {
                assert!(
                    Instant::now() < deadline,
                    "{}: legacy children {children:?} outlived the SIGKILLed proxy by 30 s",
                    sdk.name()
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
    }
}
