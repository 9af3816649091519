//! Lanes over legacy Streamable HTTP: one `Mcp-Session-Id` session per lane.

use serde_json::Value;

use super::{BackendError, Initialized, PendingCall};
use crate::jsonrpc::ErrorObject;

#[derive(Debug)]
pub struct HttpLane {
    initialized: Initialized,
}

impl HttpLane {
    pub fn initialized(&self) -> &Initialized {
        &self.initialized
    }

    pub async fn request(
        &self,
        _method: &str,
        _params: Value,
    ) -> Result<PendingCall, BackendError> {
        Err(BackendError::Unavailable(
            "HTTP lanes are not built yet".into(),
        ))
    }

    pub async fn respond(
        &self,
        _id: Value,
        _outcome: Result<Value, ErrorObject>,
    ) -> Result<(), BackendError> {
        Err(BackendError::Unavailable(
            "HTTP lanes are not built yet".into(),
        ))
    }

    pub async fn notify(&self, _method: &str, _params: Value) -> Result<(), BackendError> {
        Err(BackendError::Unavailable(
            "HTTP lanes are not built yet".into(),
        ))
    }

    pub fn is_alive(&self) -> bool {
        false
    }
}
