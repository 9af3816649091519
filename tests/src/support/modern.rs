//! A 2026-07-28 client on rmcp 3.11: `server/discover` instead of `initialize`, `_meta` on every
//! request, MRTR driven by `RunningService::call_tool` through a scripted `ClientHandler`.

// The fixture server uses sampling and roots, which SEP-2577 deprecates; rmcp 3.11 marks their
// types deprecated. A client that must answer them has to name them.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    Implementation, ListRootsResult, NumberOrString, ProtocolVersion,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceError};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::script::{Script, SeenRequest};

/// The capabilities every scripted client declares (in `_meta` on each request): both
/// elicitation modes, sampling with `context` (the fixture's `summarize` sends
/// `includeContext: "thisServer"`), roots.
pub fn default_capabilities() -> Value {
    json!({
        "elicitation": { "form": {}, "url": {} },
        "sampling": { "context": {} },
        "roots": {},
    })
}

/// A `ClientHandler` that answers from a [`Script`] and records every request it is asked.
#[derive(Debug, Clone)]
pub struct ScriptedHandler {
    script: Arc<Script>,
    seen: Arc<Mutex<Vec<SeenRequest>>>,
    config: ClientConfig,
}

impl ScriptedHandler {
    pub fn new(script: Script, capabilities: Value) -> ScriptedHandler {
        let capabilities: ClientCapabilities =
            serde_json::from_value(capabilities).expect("valid client capabilities");
        let config = ClientConfig::new(
            capabilities,
            Implementation::new("mcp-migrate-e2e", env!("CARGO_PKG_VERSION")),
        );
        ScriptedHandler {
            script: Arc::new(script),
            seen: Arc::default(),
            config,
        }
    }

    /// Every input request answered so far, in order.
    pub fn seen(&self) -> Vec<SeenRequest> {
        self.seen.lock().unwrap().clone()
    }

    fn record(&self, context: &RequestContext<RoleClient>, method: &str, params: Value) {
        let key = match &context.id {
            NumberOrString::String(key) => Some(key.to_string()),
            NumberOrString::Number(_) => None,
        };
        self.seen.lock().unwrap().push(SeenRequest {
            key,
            method: method.into(),
            params,
        });
    }
}

fn to_json(value: &impl serde::Serialize) -> Result<Value, ErrorData> {
    serde_json::to_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

fn from_json<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

impl ClientHandler for ScriptedHandler {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let params = to_json(&request)?;
        self.record(&context, "elicitation/create", params.clone());
        from_json(self.script.elicit(&params))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.record(&context, "sampling/createMessage", to_json(&params)?);
        from_json(self.script.sample())
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.record(&context, "roots/list", Value::Null);
        from_json(self.script.list_roots())
    }

    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }
}

/// A connected rmcp 3.11 client.
pub struct ModernClient {
    pub service: RunningService<RoleClient, ScriptedHandler>,
    handler: ScriptedHandler,
}

impl std::fmt::Debug for ModernClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModernClient")
            .field("handler", &self.handler)
            .finish_non_exhaustive()
    }
}

impl ModernClient {
    /// Connects in 2026-07-28 mode (`server/discover`, no fallback). `bearer` is sent as
    /// `Authorization: Bearer <bearer>` on every request. Panics if the connection fails.
    pub async fn connect(url: &str, script: Script, bearer: Option<&str>) -> ModernClient {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        Self::try_connect(url, script, bearer, lifecycle)
            .await
            .unwrap_or_else(|e| panic!("rmcp 3.11 client could not connect to {url}: {e}"))
    }

    /// Connects with any lifecycle mode and the [default capabilities](default_capabilities).
    pub async fn try_connect(
        url: &str,
        script: Script,
        bearer: Option<&str>,
        lifecycle: ClientLifecycleMode,
    ) -> Result<ModernClient, ClientInitializeError> {
        Self::try_connect_with(url, script, default_capabilities(), bearer, lifecycle).await
    }

    /// Connects with explicit capabilities.
    pub async fn try_connect_with(
        url: &str,
        script: Script,
        capabilities: Value,
        bearer: Option<&str>,
        lifecycle: ClientLifecycleMode,
    ) -> Result<ModernClient, ClientInitializeError> {
        let handler = ScriptedHandler::new(script, capabilities);
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
        if let Some(token) = bearer {
            config = config.auth_header(token.to_string());
        }
        // Like rmcp's own default client (no idle pooling), but never through a system proxy.
        let http = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(0)
            .build()
            .expect("reqwest client");
        let transport = StreamableHttpClientTransport::with_client(http, config);
        let service = handler
            .clone()
            .serve_with_lifecycle(transport, lifecycle)
            .await?;
        Ok(ModernClient { service, handler })
    }

    /// `tools/call`, driving every MRTR round through the scripted handler (rmcp's
    /// `RunningService::call_tool`, at most 10 rounds).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ServiceError> {
        self.service.call_tool(tool_params(name, arguments)).await
    }

    /// One `tools/call` round: a final result or the intermediate `InputRequired` result.
    pub async fn call_tool_once(
        &self,
        params: CallToolRequestParams,
    ) -> Result<CallToolResponse, ServiceError> {
        self.service.call_tool_once(params).await
    }

    /// Every input request the handler answered, in order.
    pub fn seen(&self) -> Vec<SeenRequest> {
        self.handler.seen()
    }

    /// Closes the connection.
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

/// `CallToolRequestParams` for `name` with `arguments` (a JSON object, or `null` for none).
pub fn tool_params(name: &str, arguments: Value) -> CallToolRequestParams {
    let params = CallToolRequestParams::new(name.to_string());
    match arguments {
        Value::Object(map) => params.with_arguments(map),
        Value::Null => params,
        other => panic!("tool arguments must be an object, not {other}"),
    }
}

/// The text blocks of a tool result, joined with newlines.
pub fn tool_text(result: &CallToolResult) -> String {
    let value = serde_json::to_value(result).expect("serializable result");
    value["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|block| block["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
