//! Listening and serving connections: the accept loop ([`serve`]), TLS on each connection when
//! configured, HTTP/1.1 with the head limits and timeouts, and the shutdown grace.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use super::stop::{ConnectionStop, OpenConnections};
use super::HttpFrontConfig;
use crate::front::callers::CallerAuth;
use crate::limits::RequestGate;
use crate::request::Handler;

/// Serves the front on `listener` until `shutdown` is cancelled: one task per connection
/// (HTTP/1.1), one task per request for the handler. On shutdown it stops accepting, lets open
/// responses finish for up to [`HttpFrontConfig::shutdown_grace`], then returns.
pub async fn serve(
    listener: TcpListener,
    config: HttpFrontConfig,
    handler: Arc<dyn Handler>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let gate = RequestGate::new(config.max_concurrent_requests);
    let callers = CallerAuth {
        forward: config.forward_headers.clone(),
        jwt: config.jwt.clone(),
        require: config.resource_server.clone(),
    };
    let front = Arc::new(Front {
        callers,
        config,
        handler,
        gate,
    });
    let connections = TaskTracker::new();
    let open = Arc::new(OpenConnections::default());
    loop {
        let accepted = tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(%error, "accepting a connection failed");
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(Duration::from_millis(50)) => continue,
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let span = tracing::debug_span!("connection", %peer);
        connections.spawn(
            front
                .clone()
                .serve_connection(stream, open.register())
                .instrument(span),
        );
    }
    // Stop accepting: new connections are refused from here on, not left in the backlog.
    drop(listener);
    open.stop_all();
    connections.close();
    connections.wait().await;
    Ok(())
}

/// The front's shared state: one per [`serve`], shared by its connections.
pub(super) struct Front {
    pub(super) config: HttpFrontConfig,
    pub(super) callers: CallerAuth,
    pub(super) handler: Arc<dyn Handler>,
    pub(super) gate: RequestGate,
}

impl Front {
    async fn serve_connection(self: Arc<Self>, stream: TcpStream, stop: ConnectionStop) {
        let Some(tls) = &self.config.tls else {
            return self.serve_http(stream, stop).await;
        };
        // The certificate in use now is this connection's, whatever a reload does meanwhile.
        let acceptor = tls.acceptor();
        let handshake = tokio::time::timeout(
            self.config.header_read_timeout,
            crate::front::tls::accept(acceptor, stream),
        );
        let stream = tokio::select! {
            () = stop.requested() => return,
            outcome = handshake => match outcome {
                Ok(Ok(stream)) => stream,
                Ok(Err(error)) => {
                    crate::metrics::global().rejection(match error {
                        crate::front::tls::AcceptError::PlainHttp => "plain_http_on_tls",
                        crate::front::tls::AcceptError::Handshake(_) => "tls_handshake",
                    });
                    tracing::debug!(%error, "connection not served");
                    return;
                }
                Err(_) => {
                    tracing::debug!("TLS handshake not finished within the header read timeout");
                    return;
                }
            },
        };
        self.serve_http(stream, stop).await;
    }

    /// Serves HTTP/1.1 on `stream` (a TCP connection, or TLS over one).
    async fn serve_http<S>(self: Arc<Self>, stream: S, stop: ConnectionStop)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let front = self.clone();
        let service = service_fn(move |request| {
            let front = front.clone();
            async move { Ok::<_, Infallible>(front.route(request).await) }
        });
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.config.header_read_timeout)
            .max_buf_size(self.config.max_header_bytes.max(8192))
            .max_headers(self.config.max_headers);
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        tokio::pin!(connection);
        let result = tokio::select! {
            biased;
            result = connection.as_mut() => result,
            () = stop.requested() => {
                connection.as_mut().graceful_shutdown();
                match tokio::time::timeout(self.config.shutdown_grace, connection.as_mut()).await {
                    Ok(result) => result,
                    Err(_) => {
                        tracing::debug!("connection still busy after the shutdown grace period");
                        Ok(())
                    }
                }
            }
        };
        if let Err(error) = result {
            tracing::debug!(%error, "connection ended with an error");
        }
    }
}
