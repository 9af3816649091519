//! The POSTs: the request head, each of our requests with its response read (a `404` sends it
//! again once on the new session), a dropped SSE response resumed with `GET` + `Last-Event-ID`,
//! and our responses and notifications (answered `202`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use serde_json::Value;
use tracing::Instrument as _;

use super::{
    unauthorized, HttpShared, Session, StreamEnd, MAX_IDLE_RESUMES, MAX_RETRY, SESSION_HEADER,
    VERSION_HEADER,
};
use crate::backend::call_http::{RequestHead, WireRequest, COPY_BODY_UP_TO};
use crate::backend::BackendError;
use crate::jsonrpc::Message;

impl HttpShared {
    /// The POST of `body` (every call's request goes through here), written for the wire: the
    /// fields every POST of the lane carries are kept as bytes ([`HttpShared::post_start`]), the
    /// caller's credentials and the session's fields written after them, with no header map in
    /// between (callgrind, bench/proxy-vs-nginx.md).
    pub(super) fn post(&self, body: Bytes, session: &Session) -> WireRequest {
        let session_fields = [
            (SESSION_HEADER, session.id.as_ref()),
            (VERSION_HEADER, session.version.as_ref()),
        ];
        let extra = session_fields
            .iter()
            .filter_map(|(name, value)| Some(name.as_str().len() + (*value)?.len() + 4))
            .sum::<usize>()
            + if body.len() <= COPY_BODY_UP_TO {
                body.len()
            } else {
                0
            };
        self.credentials.with_headers(|credentials| {
            let extra = extra
                + credentials
                    .iter()
                    .map(|(name, value)| name.as_str().len() + value.len() + 4)
                    .sum::<usize>();
            let mut head = RequestHead::new(&self.post_start, extra);
            for (name, value) in credentials {
                head.field(name, value);
            }
            for (name, value) in session_fields {
                if let Some(value) = value {
                    head.field(&name, value);
                }
            }
            head.finish(body)
        })
    }

    /// POSTs one of our requests and reads its response, resuming a dropped SSE stream.
    pub(super) async fn run_request(
        self: Arc<Self>,
        id: Value,
        message: Message,
        session: Session,
    ) {
        // Kept serialized (for a resend after a 404) while the response streams: a paused
        // call's task then holds its request as bytes, not as a JSON tree.
        let body = Bytes::from(message.to_vec());
        drop(message);
        self.run_request_on(id, body, session, true).await;
    }

    /// [`Self::run_request`] on `session`; `resend_after_404`: a 404 (the session expired before
    /// the server read the request, so nothing ran) sends it once more on the new session.
    async fn run_request_on(
        self: Arc<Self>,
        id: Value,
        body: Bytes,
        session: Session,
        resend_after_404: bool,
    ) {
        let request = self.post(body.clone(), &session);
        let response = match self.posts.send(request).await {
            Ok(response) => response,
            Err(error) => {
                tracing::warn!(parent: &self.core.span, %error, "POST to the legacy server failed");
                if error.is_connect() {
                    self.core.complete(
                        &id,
                        Err(BackendError::Unavailable(format!(
                            "cannot reach {}: {error}",
                            self.target
                        ))),
                    );
                    self.core.mark_dead();
                } else {
                    self.core.complete(&id, Err(BackendError::Crashed));
                }
                return;
            }
        };
        let status = response.status();
        if status == StatusCode::NOT_FOUND && session.id.is_some() {
            if resend_after_404 && !self.core.is_session_lane() {
                // Not failed with the old session's calls: it never reached a handler.
                self.core.set_pending_epoch(&id, session.epoch + 1);
                self.session_expired(session.epoch).await;
                let renewed = self.session();
                if renewed.epoch > session.epoch
                    && self.core.is_alive()
                    && self.core.is_pending(&id)
                {
                    tracing::debug!(parent: &self.core.span, id = %id, "sending the request again on the new legacy session");
                    return Box::pin(self.run_request_on(id, body, renewed, false)).await;
                }
            }
            self.core.complete(&id, Err(BackendError::Crashed));
            self.session_expired(session.epoch).await;
            return;
        }
        if status == StatusCode::ACCEPTED {
            // The response will come on another stream (the GET stream).
            return;
        }
        if let Some(refused) = unauthorized(&response) {
            // The credentials this lane was opened with are refused now (expired, revoked):
            // the caller hears it, and the lane is of no more use to anyone.
            tracing::info!(parent: &self.core.span, %status, "the legacy server refused the lane's credentials");
            self.core.complete(&id, Err(refused));
            self.core.mark_dead();
            return;
        }
        let success = status.is_success();
        let mut resume = self.read_response(response, Some(&id)).await;
        if success && resume.is_some() && self.core.is_pending(&id) {
            // Boxed: resuming is rare, and its state would otherwise be part of every call's
            // task, a paused call's included.
            match Box::pin(self.resume_stream(&id, resume)).await {
                Some(end) => resume = end,
                None => return,
            }
        }
        if self.core.is_pending(&id) {
            let error = match (success, resume) {
                (true, Some(end)) if !end.clean => BackendError::Crashed,
                (true, _) => {
                    BackendError::Protocol("the response stream ended without the response".into())
                }
                (false, _) => {
                    BackendError::Protocol(format!("the legacy server answered HTTP {status}"))
                }
            };
            self.core.complete(&id, Err(error));
        }
    }

    /// Resumes a call's SSE response stream that ended before the response (`GET` with
    /// `Last-Event-ID`), until the response came or the stream cannot be resumed. `None`: the
    /// call was failed here; otherwise how the last stream ended.
    async fn resume_stream(
        self: &Arc<Self>,
        id: &Value,
        mut resume: Option<StreamEnd>,
    ) -> Option<Option<StreamEnd>> {
        let mut idle = 0;
        while self.core.is_pending(id) && self.core.is_alive() && idle < MAX_IDLE_RESUMES {
            let Some(end) = resume.take() else {
                break;
            };
            // The server closed the stream on purpose (SEP-1699 polling): wait as it asked.
            // A broken connection is retried at once, so a dead server is noticed quickly.
            if end.clean {
                tokio::time::sleep(end.retry.min(MAX_RETRY)).await;
            }
            tracing::debug!(parent: &self.core.span, last_event_id = %end.last_event_id, "resuming the response stream");
            let session = self.session();
            let Some(request) = self.get(&session, Some(&end.last_event_id)) else {
                break;
            };
            match self.client.request(request).await {
                Ok(response) if response.status().is_success() => {
                    // Read only while the call waits: a server that ignores `Last-Event-ID` would
                    // otherwise hold us on a fresh stream forever.
                    let read = self.read_response(response, Some(id));
                    let done = async {
                        while self.core.is_pending(id) {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    };
                    let outcome = tokio::select! {
                        outcome = read => outcome,
                        () = done => None,
                    };
                    match outcome {
                        Some(next) => {
                            idle = if next.last_event_id == end.last_event_id {
                                idle + 1
                            } else {
                                0
                            };
                            resume = Some(next);
                        }
                        None => {
                            idle += 1;
                            resume = Some(StreamEnd { clean: true, ..end });
                        }
                    }
                }
                Ok(response) if response.status() == StatusCode::NOT_FOUND => {
                    self.core.complete(id, Err(BackendError::Crashed));
                    self.session_expired(session.epoch).await;
                    return None;
                }
                Ok(response) => {
                    tracing::debug!(parent: &self.core.span, status = %response.status(), "resumption refused");
                    break;
                }
                Err(error) if error.is_connect() => {
                    tracing::warn!(parent: &self.core.span, %error, "the legacy server went away during a call");
                    self.core.complete(id, Err(BackendError::Crashed));
                    self.core.mark_dead();
                    return None;
                }
                Err(error) => {
                    // Typically a pooled connection the dying server had already closed: try
                    // again at once on a new one (a dead server then refuses the connection).
                    tracing::debug!(parent: &self.core.span, %error, "resumption failed");
                    idle += 1;
                    resume = Some(StreamEnd {
                        clean: false,
                        ..end
                    });
                }
            }
        }
        Some(resume)
    }

    /// POSTs a response or notification; the server should answer 202.
    pub(super) async fn post_message(
        self: &Arc<Self>,
        message: &Message,
    ) -> Result<(), BackendError> {
        let session = self.session();
        let request = self.post(Bytes::from(message.to_vec()), &session);
        let response = self.posts.send(request).await.map_err(|error| {
            if error.is_connect() {
                BackendError::Unavailable(format!("cannot reach {}: {error}", self.target))
            } else {
                BackendError::Crashed
            }
        })?;
        let status = response.status();
        if status == StatusCode::NOT_FOUND && session.id.is_some() {
            let shared = Arc::clone(self);
            let epoch = session.epoch;
            tokio::spawn(
                async move { shared.session_expired(epoch).await }
                    .instrument(self.core.span.clone()),
            );
            return Err(BackendError::Crashed);
        }
        if let Some(refused) = unauthorized(&response) {
            self.core.mark_dead();
            return Err(refused);
        }
        if !status.is_success() {
            return Err(BackendError::Protocol(format!(
                "the legacy server answered HTTP {status}"
            )));
        }
        if status != StatusCode::ACCEPTED {
            // Unusual, but whatever came back is routed like any other message.
            let _ = self.read_response(response, None).await;
        }
        Ok(())
    }
}
