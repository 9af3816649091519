//! The `ServerHandler`: capabilities, logging level, and dispatch to [`crate::catalog`] (fixed
//! answers) and [`crate::push`] (answers that need the client).

use std::sync::{Arc, Mutex};

use legacy_rmcp::{
    model::{
        CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult,
        GetPromptRequestParams, GetPromptResult, Implementation, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
        PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResult,
        ServerCapabilities, ServerInfo, SetLevelRequestParams, SubscribeRequestParams,
        UnsubscribeRequestParams,
    },
    service::RequestContext,
    ErrorData as McpError, RoleServer, ServerHandler,
};
use serde_json::json;

use crate::{catalog, push};

/// One server per MCP session (per process over stdio).
#[derive(Clone)]
pub struct ConformanceServer {
    /// Minimum level for `notifications/message`, set by `logging/setLevel`.
    log_level: Arc<Mutex<LoggingLevel>>,
}

impl ConformanceServer {
    pub fn new() -> Self {
        Self {
            log_level: Arc::new(Mutex::new(LoggingLevel::Info)),
        }
    }

    fn log_level(&self) -> LoggingLevel {
        *self.log_level.lock().expect("log level lock")
    }
}

impl ServerHandler for ConformanceServer {
    fn get_info(&self) -> ServerInfo {
        // What the suite's reference server declares: list-changed notifications, resource
        // subscriptions, logging and completions. (A 2026-07-28 front must not repeat the
        // notification flags unless it serves `subscriptions/listen`.)
        ServerInfo::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .enable_logging()
                .enable_completions()
                .build(),
        )
        // The newest protocol that rmcp 2.2 implements.
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
        .with_server_info(Implementation::new(
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions("Legacy push-style server for the MCP conformance suite.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(catalog::from_json(json!({ "tools": catalog::tools() })))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let arguments = request.arguments.unwrap_or_default();
        if let Some(result) = catalog::static_tool_result(&request.name, &arguments) {
            return Ok(catalog::from_json(result));
        }
        match push::call_tool(&request.name, &arguments, &context, self.log_level()).await {
            Some(outcome) => outcome,
            None => Err(McpError::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            )),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(catalog::from_json(json!({ "prompts": catalog::prompts() })))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResult, McpError> {
        let arguments = request.arguments.unwrap_or_default();
        if let Some(result) = catalog::static_prompt(&request.name, &arguments)? {
            return Ok(catalog::from_json(result));
        }
        match push::get_prompt(&request.name, &context).await {
            Some(outcome) => outcome,
            None => Err(McpError::invalid_params(
                format!("unknown prompt `{}`", request.name),
                None,
            )),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(catalog::from_json(
            json!({ "resources": catalog::resources() }),
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(catalog::from_json(
            json!({ "resourceTemplates": catalog::resource_templates() }),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, McpError> {
        match catalog::read_resource(&request.uri) {
            Some(result) => Ok(catalog::from_json(result)),
            // The legacy "resource not found" error: -32002 with the URI in `data`.
            None => Err(McpError::resource_not_found(
                format!("no resource at {}", request.uri),
                Some(json!({ "uri": request.uri })),
            )),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // The resources never change, so there is never anything to notify.
        tracing::info!(uri = %request.uri, "subscribed");
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        tracing::info!(uri = %request.uri, "unsubscribed");
        Ok(())
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        // Like the suite's reference server: a valid, empty completion.
        Ok(catalog::from_json(
            json!({ "completion": { "values": [], "total": 0, "hasMore": false } }),
        ))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        tracing::info!(level = ?request.level, "client set the log level");
        *self.log_level.lock().expect("log level lock") = request.level;
        Ok(())
    }
}
