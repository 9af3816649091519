//! The standalone GET stream: its request, and the task that keeps it open (reconnecting with
//! `Last-Event-ID`, backing off, re-initializing on `404`, giving up on `405`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, HOST};
use http::{Method, Request, StatusCode};
use http_body_util::Full;

use super::{
    HttpShared, Session, DEFAULT_RETRY, LAST_EVENT_ID, MAX_RETRY, SESSION_HEADER, VERSION_HEADER,
};
use crate::backend::sse::SseParser;

impl HttpShared {
    pub(super) fn get(
        &self,
        session: &Session,
        last_event_id: Option<&str>,
    ) -> Option<Request<Full<Bytes>>> {
        let mut request = self
            .credentials
            .apply(Request::builder())
            .method(Method::GET)
            .uri(self.path.clone())
            .header(HOST, self.host.clone())
            .header(ACCEPT, "text/event-stream");
        if let Some(id) = &session.id {
            request = request.header(SESSION_HEADER, id.clone());
        }
        if let Some(version) = &session.version {
            request = request.header(VERSION_HEADER, version.clone());
        }
        if let Some(last) = last_event_id {
            request = request.header(LAST_EVENT_ID, last);
        }
        request.body(Full::new(Bytes::new())).ok()
    }

    /// The standalone GET stream: kept open, reconnected with `Last-Event-ID`.
    /// `open` is told once the server answered the first GET (whatever it answered).
    pub(super) async fn run_get_stream(
        self: Arc<Self>,
        mut open: Option<tokio::sync::oneshot::Sender<()>>,
    ) {
        let mut last_event_id: Option<String> = None;
        let mut epoch = self.session().epoch;
        let mut backoff = DEFAULT_RETRY;
        loop {
            if self.shut.load(Ordering::SeqCst) || !self.core.is_alive() {
                return;
            }
            let session = self.session();
            if session.epoch != epoch {
                epoch = session.epoch;
                last_event_id = None;
            }
            let Some(request) = self.get(&session, last_event_id.as_deref()) else {
                return;
            };
            let answered = self.client.request(request).await;
            if let Some(open) = open.take() {
                let _ = open.send(());
            }
            match answered {
                Ok(response) if response.status() == StatusCode::OK => {
                    backoff = DEFAULT_RETRY;
                    tracing::debug!("standalone GET stream open");
                    let mut parser = SseParser::new();
                    let clean = self.read_sse(response.into_body(), &mut parser, None).await;
                    if let Some(last) = parser.last_event_id().filter(|last| !last.is_empty()) {
                        last_event_id = Some(last.to_owned());
                    }
                    // A clean end is the server's choice: wait as long as it asked. A broken
                    // connection is retried sooner (and backs off if it keeps failing).
                    let delay = if clean {
                        parser
                            .retry_ms()
                            .map(Duration::from_millis)
                            .unwrap_or(DEFAULT_RETRY)
                    } else {
                        backoff
                    };
                    tracing::debug!(?delay, clean, "standalone GET stream ended: reconnecting");
                    tokio::time::sleep(delay.min(MAX_RETRY)).await;
                }
                Ok(response) if response.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::info!("the legacy server offers no standalone GET stream (405)");
                    return;
                }
                Ok(response) if response.status() == StatusCode::NOT_FOUND => {
                    self.session_expired(session.epoch).await;
                    // A new session restarts this task; stop unless nothing changed.
                    if self.session().epoch != session.epoch {
                        return;
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_RETRY);
                }
                Ok(response) => {
                    tracing::debug!(status = %response.status(), "standalone GET refused");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_RETRY);
                }
                Err(error) => {
                    tracing::debug!(%error, "standalone GET failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_RETRY);
                }
            }
        }
    }
}
