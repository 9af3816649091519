//! `server/discover`: answered from the legacy `InitializeResult` (T3; no `tasks`, T21).

use mcp_migrate_rules::RuleId;
use serde_json::{json, Value};

use super::wire::{backend_failure, front_capabilities};
use super::{Engine, FRONT_VERSION};
use crate::jsonrpc::ErrorObject;
use crate::request::FrontRequest;

impl Engine {
    pub(super) async fn discover(&self, request: &FrontRequest) -> Result<Value, ErrorObject> {
        let initialized = self
            .pool_for(request)?
            .initialized()
            .await
            .map_err(backend_failure)?;
        let legacy = &initialized.result;
        let capabilities = front_capabilities(legacy.get("capabilities"));
        if legacy.pointer("/capabilities/logging").is_some() {
            self.warn_deprecated(
                "legacy-server",
                RuleId::DeprecatedLogging,
                "the legacy server declares the logging capability",
            );
        }
        let mut result = json!({
            "resultType": "complete",
            "supportedVersions": [FRONT_VERSION],
            "capabilities": capabilities,
            "ttlMs": 0,
            "cacheScope": "private",
        });
        if let Some(instructions) = legacy.get("instructions") {
            result["instructions"] = instructions.clone();
        }
        if let Some(info) = legacy.get("serverInfo") {
            result["_meta"] = json!({ "io.modelcontextprotocol/serverInfo": info });
        }
        Ok(result)
    }
}
