//! A legacy, push-style MCP server that exposes what the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`) calls on a server under test.
//!
//! It is the backend of the proxy's conformance run: `mcp-mrtr-proxy` in front of this server
//! must pass the suite's 2026-07-28 server scenarios, and this server alone must pass the
//! 2025-11-25 ones. So it is written the way servers were written before 2026-07-28, on the
//! legacy Rust SDK rmcp 2.2: every tool that needs something from the client *pushes* an
//! `elicitation/create`, `sampling/createMessage` or `roots/list` request in the middle of its
//! own call and awaits the answer. The MRTR scenarios' tools (`test_input_required_result_*`)
//! are no exception: turning those pushes into `input_required` rounds is the proxy's job.
//!
//! Module map:
//! - [`catalog`]: the fixed tools, prompts and resources with the outputs the suite expects;
//! - [`push`]: the tools and the prompt that push requests to the client mid-call;
//! - [`server`]: the `ServerHandler` that dispatches to both.
//!
//! Deliberately legacy code (the linter's dogfood run excludes it). Do not copy it.

// rmcp 2.x marks sampling, roots and logging `#[deprecated]` (SEP-2577); legacy servers
// silence that and carry on.
#![allow(deprecated)]

mod catalog;
mod push;
mod server;

use std::net::SocketAddr;

use anyhow::Context as _;
use clap::{Parser, ValueEnum};
use legacy_rmcp::{
    transport::{
        stdio,
        streamable_http_server::{
            session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
        },
    },
    ServiceExt,
};
use tokio_util::sync::CancellationToken;

use server::ConformanceServer;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Transport {
    Stdio,
    Http,
}

/// Legacy MCP server (rmcp 2.2, push style) with the conformance suite's tools, prompts and
/// resources.
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    /// Transport to serve on.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    transport: Transport,
    /// Address for `--transport http` (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8000")]
    listen: SocketAddr,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // stdout carries the protocol (stdio) or the address line (http): log to stderr.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();

    let cli = Cli::parse();
    match cli.transport {
        Transport::Stdio => serve_stdio().await,
        Transport::Http => serve_http(cli.listen).await,
    }
}

async fn serve_stdio() -> anyhow::Result<()> {
    let service = ConformanceServer::new()
        .serve(stdio())
        .await
        .context("MCP initialization over stdio failed")?;
    service.waiting().await?;
    Ok(())
}

async fn serve_http(listen: SocketAddr) -> anyhow::Result<()> {
    let ct = CancellationToken::new();
    // Stateful Streamable HTTP, one `ConformanceServer` per `Mcp-Session-Id`; rmcp 2.2 sends
    // server-to-client requests on the session's standalone GET stream. Only loopback `Host`
    // values are accepted (rmcp's DNS-rebinding default).
    let service = StreamableHttpService::new(
        || Ok(ConformanceServer::new()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default()
            .with_stateful_mode(true)
            .with_cancellation_token(ct.child_token()),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    // Tests wait for this exact line.
    println!("listening on http://{addr}/mcp");
    tracing::info!(%addr, "serving Streamable HTTP");

    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            // If no signal handler can be installed, run until killed.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
            ct.cancel();
        })
        .await?;
    Ok(())
}
