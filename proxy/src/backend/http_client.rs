//! The hyper HTTP/1.1 connections of one HTTP lane to the legacy server: its standalone GET
//! stream, the GETs that resume a call's broken stream, and the `DELETE` of the session (the
//! POSTs go through the lean client of `call_http`).
//!
//! A lane is one legacy session, and its connections are never shared with another lane, so it
//! keeps them itself: a request takes the most recently kept connection that is ready (its
//! previous exchange is over, response body included), or opens a new one; after the response
//! head the connection is kept again (up to [`MAX_KEPT`]) while its body streams. A connection
//! the server closed is noticed and dropped, and so is one left idle longer than the idle timeout
//! (a middlebox may have dropped it silently); a request that a kept connection could not even
//! send (the server closed it meanwhile) goes out again on a new one, as hyper-util's client does.
//!
//! Why not hyper-util's pooled `Client`: its checkout hashes the (scheme, authority) key with
//! SipHash, takes the pool mutex and spawns a task per request to hand the connection back:
//! 6.6 % of the proxy's instructions per pass-through call (bench/PROXY.md).

use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tracing::Instrument as _;

/// Kept connections per lane, for each of the two clients: for hyper's, the standalone GET
/// stream and resumptions; for `call_http`'s, a call's POST stream, answers POSTed meanwhile,
/// and concurrent requests on a shared lane. More are closed after their exchange.
pub(super) const MAX_KEPT: usize = 8;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    /// No connection could be made (refused, timed out, unresolvable).
    #[error("cannot connect: {0}")]
    Connect(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The exchange failed on an established connection.
    #[error(transparent)]
    Http(#[from] hyper::Error),
    /// The exchange failed on an established connection of the lean client (call_http.rs): a
    /// broken connection or a malformed response head.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl ClientError {
    pub(crate) fn is_connect(&self) -> bool {
        matches!(self, ClientError::Connect(_))
    }
}

/// A plain-`http://` upstream URL taken apart for requests in origin form.
pub(crate) struct Upstream {
    pub uri: Uri,
    /// The `Host` header: the URL's authority.
    pub host: http::HeaderValue,
    /// The request target: the URL's path and query.
    pub path: Uri,
}

impl Upstream {
    /// Refuses other schemes (TLS is not supported) and URLs without a host.
    pub(crate) fn parse(url: &str) -> Result<Upstream, super::BackendError> {
        let unavailable = super::BackendError::Unavailable;
        let uri: Uri = url
            .parse()
            .map_err(|error| unavailable(format!("bad upstream URL: {error}")))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(other) => {
                return Err(unavailable(format!(
                    "upstream scheme `{other}` is not supported (plain http only)"
                )))
            }
            None => return Err(unavailable("the upstream URL has no scheme".into())),
        }
        let authority = uri
            .authority()
            .ok_or_else(|| unavailable("the upstream URL has no host".into()))?;
        let host = http::HeaderValue::from_str(authority.as_str())
            .map_err(|error| unavailable(format!("bad upstream host: {error}")))?;
        let path = uri
            .path_and_query()
            .map_or("/", |path| path.as_str())
            .parse()
            .map_err(|error| unavailable(format!("bad upstream path: {error}")))?;
        Ok(Upstream { uri, host, path })
    }
}

/// One lane's connections to `uri`'s authority.
pub(crate) struct LaneConnections {
    connector: HttpConnector,
    /// Where to connect (scheme and authority are used).
    uri: Uri,
    kept: Mutex<Vec<Kept>>,
    /// A ready connection kept longer than this is closed rather than reused.
    idle_timeout: Duration,
    /// The lane's span, for the connection tasks.
    span: tracing::Span,
}

struct Kept {
    sender: SendRequest<Full<Bytes>>,
    /// When its last exchange's response head arrived.
    since: Instant,
}

impl Kept {
    /// Open, and not idle past `idle_timeout`.
    fn usable(&self, idle_timeout: Duration) -> bool {
        let idle_too_long = self.sender.is_ready() && self.since.elapsed() > idle_timeout;
        !self.sender.is_closed() && !idle_too_long
    }
}

impl LaneConnections {
    pub(crate) fn new(
        uri: Uri,
        connect_timeout: Duration,
        idle_timeout: Duration,
        span: tracing::Span,
    ) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(connect_timeout));
        connector.set_nodelay(true);
        LaneConnections {
            connector,
            uri,
            kept: Mutex::new(Vec::new()),
            idle_timeout,
            span,
        }
    }

    /// Sends `request` (origin-form URI, `Host` set by the caller) and waits for the response
    /// head.
    pub(crate) async fn request(
        &self,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, ClientError> {
        loop {
            let (mut sender, reused) = match self.take_ready() {
                Some(sender) => (sender, true),
                None => (self.connect().await?, false),
            };
            match sender.try_send_request(request).await {
                Ok(response) => {
                    self.keep(sender);
                    return Ok(response);
                }
                Err(mut error) => match error.take_message() {
                    // Never written: the kept connection was closed meanwhile. A new one.
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(ClientError::Http(error.into_error())),
                },
            }
        }
    }

    /// How many connections are kept (open, idle or busy).
    #[cfg(test)]
    fn kept(&self) -> usize {
        let mut kept = self.lock();
        kept.retain(|kept| kept.usable(self.idle_timeout));
        kept.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Kept>> {
        super::lock(&self.kept)
    }

    fn take_ready(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut kept = self.lock();
        kept.retain(|kept| kept.usable(self.idle_timeout));
        // The most recently kept first (as hyper-util's pool does): one warm connection carries
        // back-to-back exchanges, and the others stay idle rather than taking turns.
        let ready = kept.iter().rposition(|kept| kept.sender.is_ready())?;
        Some(kept.remove(ready).sender)
    }

    fn keep(&self, sender: SendRequest<Full<Bytes>>) {
        let mut kept = self.lock();
        if kept.len() < MAX_KEPT && !sender.is_closed() {
            kept.push(Kept {
                sender,
                since: Instant::now(),
            });
        }
        // Otherwise dropped: the connection closes once its exchange is over.
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, ClientError> {
        let mut connector = self.connector.clone();
        let stream = tower_service::Service::<Uri>::call(&mut connector, self.uri.clone())
            .await
            .map_err(|error| ClientError::Connect(Box::new(error)))?;
        let io = QuickAckIo(stream);
        io.quickack();
        let (sender, connection) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|error| ClientError::Connect(Box::new(error)))?;
        tokio::spawn(
            async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "a connection to the legacy server failed");
                }
            }
            .instrument(self.span.clone()),
        );
        Ok(sender)
    }
}

/// A lane's TCP connection, acknowledging what it receives at once (`TCP_QUICKACK`, Linux), set
/// again after every read because the kernel clears it. `TCP_NODELAY` is set by the connector.
///
/// Why: a legacy server whose sockets keep Nagle's algorithm on (the default of `axum::serve`,
/// so of rmcp 2.x servers) writes an SSE response in two parts, and holds the second part until
/// the first is acknowledged. A lane reuses one keep-alive connection, so the kernel treats it as
/// interactive and delays that ACK by up to 40 ms: without this, every proxied call over plain
/// loopback took ≥ 40 ms (bench/PROXY.md).
struct QuickAckIo(TokioIo<TcpStream>);

impl QuickAckIo {
    fn quickack(&self) {
        quickack(self.0.inner());
    }
}

/// Sets `TCP_QUICKACK` on `stream` (see [`QuickAckIo`]; the kernel clears it, so it is set again
/// after every read, or, on the lanes' POST connections, whenever they wait for the rest of a
/// response: setting it also sends an ACK the kernel was delaying). Best effort: without it the
/// connection only gets slower.
pub(super) fn quickack(stream: &TcpStream) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let _ = socket2::SockRef::from(stream).set_tcp_quickack(true);
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = stream;
}

impl hyper::rt::Read for QuickAckIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.0).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) {
            self.quickack();
        }
        polled
    }
}

impl hyper::rt::Write for QuickAckIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    /// A plain hyper HTTP/1.1 server answering every request with its path and `Host`; counts
    /// connections. Without keep-alive it closes each connection after one response.
    async fn server_with(
        keep_alive: bool,
    ) -> (Uri, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let connections = std::sync::Arc::new(AtomicUsize::new(0));
        let counter = std::sync::Arc::clone(&connections);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    // `/hold`: the body ends only after 300 ms, so the connection stays busy.
                    let service =
                        hyper::service::service_fn(|request: Request<Incoming>| async move {
                            let head = format!(
                                "{} {}",
                                request.uri(),
                                request.headers()["host"].to_str().unwrap()
                            );
                            let hold = request.uri().path() == "/hold";
                            let chunks =
                                futures_util::stream::unfold(Some(head), move |head| async move {
                                    let head = head?;
                                    if hold {
                                        tokio::time::sleep(Duration::from_millis(300)).await;
                                    }
                                    Some((
                                        Ok::<_, std::convert::Infallible>(
                                            hyper::body::Frame::data(Bytes::from(head)),
                                        ),
                                        None,
                                    ))
                                });
                            Ok::<_, std::convert::Infallible>(Response::new(
                                http_body_util::StreamBody::new(chunks),
                            ))
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .keep_alive(keep_alive)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        (
            format!("http://{address}/mcp").parse().unwrap(),
            connections,
        )
    }

    async fn server() -> (Uri, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        server_with(true).await
    }

    fn lane_for(uri: &Uri) -> LaneConnections {
        LaneConnections::new(
            uri.clone(),
            Duration::from_secs(1),
            Duration::from_secs(30),
            tracing::Span::none(),
        )
    }

    /// One `GET /mcp` on `lane`, body read to the end.
    async fn round_trip(lane: &LaneConnections, uri: &Uri) -> Bytes {
        let response = lane.request(get(uri)).await.unwrap();
        response.into_body().collect().await.unwrap().to_bytes()
    }

    fn get(uri: &Uri) -> Request<Full<Bytes>> {
        get_path(uri, "/mcp")
    }

    fn get_path(uri: &Uri, path: &str) -> Request<Full<Bytes>> {
        Request::builder()
            .uri(path)
            .header(http::header::HOST, uri.authority().unwrap().as_str())
            .body(Full::new(Bytes::new()))
            .unwrap()
    }

    #[tokio::test]
    async fn sequential_requests_reuse_one_connection() {
        let (uri, connections) = server().await;
        let lane = lane_for(&uri);
        for _ in 0..20 {
            let body = round_trip(&lane, &uri).await;
            assert_eq!(
                body,
                format!("/mcp {}", uri.authority().unwrap()).as_bytes()
            );
        }
        assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(lane.kept(), 1);
    }

    #[tokio::test]
    async fn a_busy_connection_is_not_reused_and_extra_ones_are_closed() {
        let (uri, connections) = server().await;
        let lane = lane_for(&uri);
        // Response heads read, bodies still streaming: every connection stays busy.
        let mut open = Vec::new();
        for _ in 0..MAX_KEPT + 2 {
            open.push(lane.request(get_path(&uri, "/hold")).await.unwrap());
        }
        assert_eq!(
            connections.load(std::sync::atomic::Ordering::SeqCst),
            MAX_KEPT + 2
        );
        for response in open {
            response.into_body().collect().await.unwrap();
        }
        // Only MAX_KEPT were kept; the others closed after their exchange.
        lane.request(get(&uri)).await.unwrap();
        assert_eq!(lane.kept(), MAX_KEPT);
    }

    #[tokio::test]
    async fn connections_the_server_closes_are_replaced() {
        let (uri, connections) = server_with(false).await;
        let lane = lane_for(&uri);
        for _ in 0..5 {
            round_trip(&lane, &uri).await;
        }
        assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 5);
        assert!(lane.kept() <= 1);
    }

    #[tokio::test]
    async fn nothing_listening_is_a_connect_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let uri: Uri = format!("http://{}/mcp", listener.local_addr().unwrap())
            .parse()
            .unwrap();
        drop(listener);
        let lane = lane_for(&uri);
        let error = lane.request(get(&uri)).await.unwrap_err();
        assert!(error.is_connect(), "{error:?}");
    }

    #[tokio::test]
    async fn a_connection_idle_past_the_timeout_is_replaced() {
        let (uri, connections) = server().await;
        // The reuse between the first two exchanges must fit in the idle timeout, so it is
        // generous (a loaded machine); the sleep is the part that must exceed it, and a sleep
        // never ends early.
        let idle_timeout = Duration::from_secs(1);
        let lane = LaneConnections::new(
            uri.clone(),
            Duration::from_secs(1),
            idle_timeout,
            tracing::Span::none(),
        );
        round_trip(&lane, &uri).await;
        round_trip(&lane, &uri).await;
        assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
        tokio::time::sleep(idle_timeout + Duration::from_millis(50)).await;
        round_trip(&lane, &uri).await;
        assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(lane.kept(), 1);
    }
}
