//! Opening a legacy session (`initialize`, `notifications/initialized`, then the GET stream,
//! waited for up to 2 s) and opening a new one when the old expired (404).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use tracing::Instrument as _;

use super::{unauthorized, HttpShared, Session, GET_STREAM_WAIT, SESSION_HEADER};
use crate::backend::{lock, BackendError, Initialized};
use crate::jsonrpc::Message;

impl HttpShared {
    /// `initialize` + `notifications/initialized` on a new session, then the GET stream.
    ///
    /// Boxed with an explicit `Send` bound: the GET stream task it spawns can call it again
    /// (through `session_expired`), and that cycle hides `Send` from the compiler otherwise.
    pub(super) fn open_session(
        self: &Arc<Self>,
        epoch: u64,
    ) -> Pin<Box<dyn Future<Output = Result<Initialized, BackendError>> + Send + '_>> {
        Box::pin(self.open_session_inner(epoch))
    }

    async fn open_session_inner(self: &Arc<Self>, epoch: u64) -> Result<Initialized, BackendError> {
        let params = self.core.initialize_params(&self.client_info);
        let (message, call, _) = self.core.start_request("initialize", params, epoch, None)?;
        let fresh = Session {
            id: None,
            epoch,
            version: None,
        };
        let request = self
            .post(Bytes::from(message.to_vec()), &fresh)
            .reading_session_id();
        let exchange = async {
            let response = self.posts.send(request).await.map_err(|error| {
                BackendError::Unavailable(format!("cannot reach {}: {error}", self.target))
            })?;
            let status = response.status();
            if matches!(
                status,
                StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
            ) {
                return Err(BackendError::NotStreamableHttp(format!(
                    "initialize was answered with HTTP {status}"
                )));
            }
            if let Some(refused) = unauthorized(&response) {
                return Err(refused);
            }
            if !status.is_success() {
                return Err(BackendError::Unavailable(format!(
                    "initialize was answered with HTTP {status}"
                )));
            }
            let session_id = response
                .headers()
                .get(SESSION_HEADER)
                .filter(|value| value.to_str().is_ok())
                // A copy: the value must not hold on to the response's read buffer.
                .and_then(|value| HeaderValue::from_bytes(value.as_bytes()).ok());
            // Read the body in the background: the response may follow server messages.
            let shared = Arc::clone(self);
            let id = call.legacy_id.clone();
            let reader = tokio::spawn(
                async move { shared.read_response(response, Some(&id)).await }
                    .instrument(self.core.span.clone()),
            );
            let result = crate::backend::await_initialize(call, self.init_timeout).await;
            reader.abort();
            Ok((session_id, result?))
        };
        let (session_id, result) = tokio::time::timeout(self.init_timeout, exchange)
            .await
            .map_err(|_| {
                BackendError::Unavailable(format!(
                    "no answer to initialize within {:?}",
                    self.init_timeout
                ))
            })??;
        let initialized = crate::backend::check_initialize(result)?;
        let session = Session {
            id: session_id,
            epoch,
            version: super::version_header(&initialized.protocol_version),
        };
        *lock(&self.session) = session.clone();
        let notification = Message::Notification {
            method: "notifications/initialized".into(),
            params: None,
        };
        tokio::time::timeout(self.init_timeout, self.post_message(&notification))
            .await
            .map_err(|_| {
                BackendError::Unavailable("notifications/initialized was not accepted".into())
            })??;
        self.stop_get_stream();
        if self.shut.load(Ordering::SeqCst) {
            return Ok(initialized);
        }
        let shared = Arc::clone(self);
        let (open_tx, open) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(
            async move { shared.run_get_stream(Some(open_tx)).await }
                .instrument(self.core.span.clone()),
        );
        *lock(&self.get_task) = Some(task);
        // A server that sends requests on the GET stream drops them while no stream is open
        // (the TypeScript SDK does): the lane serves calls once the server answered the GET.
        let _ = tokio::time::timeout(GET_STREAM_WAIT.min(self.init_timeout), open).await;
        Ok(initialized)
    }

    /// The session expired (404): start a new one, unless another task already did.
    pub(super) async fn session_expired(self: &Arc<Self>, epoch: u64) {
        let _serial = self.reinit.lock().await;
        let current = self.session().epoch;
        if current != epoch || self.shut.load(Ordering::SeqCst) || !self.core.is_alive() {
            return;
        }
        if self.core.is_session_lane() {
            // A legacy client's own session: it re-initializes itself once told (404).
            tracing::info!(parent: &self.core.span, "the legacy session expired (404): ending the client's session");
            self.core.mark_dead();
            return;
        }
        tracing::warn!(parent: &self.core.span, "the legacy session expired (404): re-initializing the lane");
        self.core.fail_pending_up_to(epoch, BackendError::Crashed);
        match self.open_session(epoch + 1).await {
            Ok(initialized) => tracing::info!(
                parent: &self.core.span,
                protocol_version = %initialized.protocol_version,
                "legacy HTTP session re-initialized"
            ),
            Err(error) => {
                tracing::warn!(parent: &self.core.span, %error, "re-initializing the legacy session failed");
                self.core.mark_dead();
            }
        }
    }
}
