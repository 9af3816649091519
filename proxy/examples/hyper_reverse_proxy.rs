//! The floor of this stack: the plainest reverse proxy that tokio and hyper make, measured beside
//! nginx and mcp-mrtr-proxy by `bench/proxy_vs_nginx.sh` (variant `hyper`, bench/proxy-vs-nginx.md).
//!
//! It does what nginx does in that benchmark and nothing more: HTTP/1.1 in front, each request
//! forwarded as it came (method, path, headers, the body streamed) on a kept-alive upstream
//! connection of its own front connection, the answer streamed back. No JSON, no MCP, no limits,
//! no logs, no metrics. The runtime and allocator are the proxy's (tokio with one worker thread,
//! jemalloc), so the difference between this and mcp-mrtr-proxy is the proxy's own work.
//!
//! `cargo run --release -p mcp-mrtr-proxy --example hyper_reverse_proxy -- UPSTREAM_HOST:PORT`
//! prints `listening on http://127.0.0.1:PORT/mcp` and serves until killed.

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::{combinators::BoxBody, BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

type Body = BoxBody<Bytes, hyper::Error>;

fn main() -> std::process::ExitCode {
    let Some(upstream) = std::env::args().nth(1) else {
        eprintln!("usage: hyper_reverse_proxy UPSTREAM_HOST:PORT");
        return std::process::ExitCode::from(2);
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(serve(Arc::from(upstream))) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::from(2)
        }
    }
}

async fn serve(upstream: Arc<str>) -> std::io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve_connection(stream, upstream.clone()));
    }
}

/// One front connection, with the upstream connection it opens on its first request and keeps.
async fn serve_connection(stream: TcpStream, upstream: Arc<str>) {
    let sender: Arc<Mutex<Option<SendRequest<Incoming>>>> = Arc::new(Mutex::new(None));
    let service = service_fn(move |request: Request<Incoming>| {
        let sender = sender.clone();
        let upstream = upstream.clone();
        async move { Ok::<_, Infallible>(forward(request, &sender, &upstream).await) }
    });
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn forward(
    request: Request<Incoming>,
    sender: &Mutex<Option<SendRequest<Incoming>>>,
    upstream: &str,
) -> Response<Body> {
    // HTTP/1.1 answers one request at a time per connection, so the lock is never contended.
    let mut slot = sender.lock().await;
    if slot.as_ref().is_none_or(|sender| sender.is_closed()) {
        match connect(upstream).await {
            Ok(sender) => *slot = Some(sender),
            Err(error) => return bad_gateway(&error.to_string()),
        }
    }
    let Some(sender) = slot.as_mut() else {
        return bad_gateway("no upstream connection");
    };
    if let Err(error) = sender.ready().await {
        *slot = None;
        return bad_gateway(&error.to_string());
    }
    match sender.send_request(request).await {
        Ok(response) => response.map(BodyExt::boxed),
        Err(error) => {
            *slot = None;
            bad_gateway(&error.to_string())
        }
    }
}

async fn connect(upstream: &str) -> Result<SendRequest<Incoming>, Box<dyn std::error::Error>> {
    let stream = TcpStream::connect(upstream).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

fn bad_gateway(reason: &str) -> Response<Body> {
    eprintln!("upstream: {reason}");
    let mut response = Response::new(
        Empty::new()
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response
}
