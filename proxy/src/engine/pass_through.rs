//! Pass-through requests (`tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list`, `completion/complete`): a shared lane of the request's capability
//! profile, a fresh legacy id, the result decorated (T5) and forbidden codes translated (T19).

use super::wire::{backend_failure, decorate_reply, flatten, internal, translate_error};
use super::Engine;
use crate::backend::BackendError;
use crate::capabilities::CapabilityProfile;
use crate::jsonrpc::{ErrorObject, Reply};
use crate::request::{FrontRequest, ResponseSink};

/// Methods forwarded as they are.
pub(super) const PASS_THROUGH: &[&str] = &[
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "completion/complete",
];

impl Engine {
    /// Forwards one pass-through request; the legacy request is cancelled when it times out or
    /// the client leaves.
    pub(super) async fn pass_through(
        &self,
        request: &FrontRequest,
        profile: &CapabilityProfile,
        sink: &mut ResponseSink,
    ) -> Result<Reply, ErrorObject> {
        let method = request.method.as_str();
        let outcome = async {
            let lane = self
                .pool_for(request)?
                .shared(profile)
                .await
                .map_err(backend_failure)?;
            let call = lane
                .request(method, request.params.legacy(None))
                .await
                .map_err(backend_failure)?;
            let legacy_id = call.legacy_id.clone();
            tokio::select! {
                response = call.response => flatten(response),
                () = tokio::time::sleep(self.settings.request_timeout) => {
                    let _ = lane.cancel(&legacy_id, "timeout").await;
                    Err(internal(BackendError::Timeout(self.settings.request_timeout).to_string()))
                }
                () = sink.closed() => {
                    let _ = lane.cancel(&legacy_id, "the client disconnected").await;
                    Err(internal("cancelled"))
                }
            }
        }
        .await;
        outcome
            .and_then(|result| decorate_reply(method, result))
            .map_err(translate_error)
    }
}
