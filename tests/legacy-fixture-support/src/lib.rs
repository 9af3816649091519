//! What the legacy fixture servers (`tests/legacy-server`, `tests/conformance-server`) share:
//! the command line (`--transport stdio|http`, `--listen ADDR`), logging to stderr, and serving
//! an rmcp 2.2 `ServerHandler` over stdio or stateful Streamable HTTP.
//!
//! Tests start these servers as real processes and, for HTTP, wait for the exact line
//! `listening on http://ADDR/mcp` on stdout.

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
    ServerHandler, ServiceExt,
};
use tokio_util::sync::CancellationToken;

/// The transport a fixture server serves on.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Transport {
    Stdio,
    Http,
}

/// The fixture servers' command line.
#[derive(Debug, Parser)]
#[command(version)]
pub struct Cli {
    /// Transport to serve on.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    pub transport: Transport,
    /// Address for `--transport http` (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub listen: SocketAddr,
}

/// Parses the command line (`about` is the server's one-line description for `--help`), logs to
/// stderr (stdout carries the protocol on stdio, the address line on HTTP) and serves a fresh
/// handler from `make` per connection (stdio) or per `Mcp-Session-Id` (HTTP) until EOF or
/// Ctrl-C.
pub async fn run<S, F>(about: &'static str, make: F) -> anyhow::Result<()>
where
    S: ServerHandler,
    F: Fn() -> S + Send + Sync + Clone + 'static,
{
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();

    let cli = Cli::parse_from_with_about(about);
    match cli.transport {
        Transport::Stdio => serve_stdio(make()).await,
        Transport::Http => serve_http(cli.listen, make).await,
    }
}

impl Cli {
    fn parse_from_with_about(about: &'static str) -> Cli {
        use clap::{CommandFactory, FromArgMatches};
        let matches = Cli::command().about(about).get_matches();
        Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
    }
}

async fn serve_stdio<S: ServerHandler>(server: S) -> anyhow::Result<()> {
    let service = server
        .serve(stdio())
        .await
        .context("MCP initialization over stdio failed")?;
    service.waiting().await?;
    Ok(())
}

async fn serve_http<S, F>(listen: SocketAddr, make: F) -> anyhow::Result<()>
where
    S: ServerHandler,
    F: Fn() -> S + Send + Sync + Clone + 'static,
{
    let ct = CancellationToken::new();
    // Stateful Streamable HTTP: one handler per `Mcp-Session-Id`. rmcp 2.2 sends every
    // server-to-client request (and log notification) on the session's standalone `GET /mcp`
    // SSE stream, buffered until it opens; only responses and progress go on the stream of the
    // originating POST. Only loopback `Host` values are accepted (rmcp's DNS-rebinding default).
    let service = StreamableHttpService::new(
        move || Ok(make()),
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
