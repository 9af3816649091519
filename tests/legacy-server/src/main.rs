//! A legacy, push-style MCP server built on rmcp 2.2.
//!
//! Every tool that needs something from the client (a form, a URL visit, an LLM
//! completion, the workspace roots) *pushes* a server-to-client request in the
//! middle of its own `tools/call` and awaits the reply. That is how servers were
//! written before protocol 2026-07-28, which replaces the pattern with
//! multi-round-trip requests (MRTR) and deprecates sampling, roots and logging.
//!
//! The code deliberately uses those legacy APIs, so `cargo mcp-lint` has real
//! findings to report on it. Do not copy it into a new server.

// rmcp 2.x marks sampling, roots and logging `#[deprecated]` (SEP-2577).
// Legacy servers typically silence that and carry on, which is also why the
// compiler alone cannot tell you what has to change.
#![allow(deprecated)]

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use legacy_rmcp::{
    elicit_safe,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{
        CallToolResult, ContentBlock, ContextInclusion, CreateMessageRequestParams,
        ElicitRequestParams, ElicitationAction, ElicitationSchema, Implementation, LoggingLevel,
        LoggingMessageNotificationParam, Meta, ProgressNotificationParam, ProtocolVersion,
        ResourceUpdatedNotificationParam, SamplingMessage, ServerCapabilities, ServerInfo,
        SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
    },
    service::{ElicitationError, NotificationContext, RequestContext},
    tool, tool_handler, tool_router, ErrorData as McpError, Peer, RoleServer, ServerHandler,
    ServiceError,
};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::Mutex;

// The rmcp 2.2 macros expand to `rmcp::...` paths; with the crate renamed to
// `legacy_rmcp`, this alias is what lets `#[tool_router]`/`#[tool]` resolve.
use legacy_rmcp as rmcp;

// ---- Tool arguments and elicitation forms ----

#[derive(Debug, Deserialize, JsonSchema)]
struct TextArgs {
    /// The text to work on.
    text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct DeleteArgs {
    /// Path of the file to delete (nothing is deleted; this is a fixture).
    path: String,
}

/// `route_query`: the region is annotated for 2026-07-28 clients, which mirror it into the
/// `Mcp-Param-Region` header (SEP-2243). A legacy server may carry the annotation; the proxy
/// checks the header.
#[derive(Debug, Deserialize, JsonSchema)]
struct RouteArgs {
    /// The region to run the query in.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    /// The query.
    query: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct CountArgs {
    /// How many progress notifications to send (at most 100).
    n: u32,
}

/// Form asked for by `ask_name`, `ask_twice` and `ask_three`.
#[derive(Debug, Deserialize, JsonSchema)]
struct UserName {
    /// Your name.
    name: String,
}

/// Second form of `ask_twice`.
#[derive(Debug, Deserialize, JsonSchema)]
struct FavoriteColor {
    /// Your favourite colour.
    color: String,
}

// Typed elicitation only accepts types that produce an object schema.
elicit_safe!(UserName, FavoriteColor);

/// The largest `n` that `slow_count` accepts.
const MAX_COUNT: u32 = 100;

// ---- The server ----

#[derive(Clone)]
struct FixtureServer {
    /// Minimum level for `notifications/message`, set by `logging/setLevel`.
    log_level: Arc<Mutex<LoggingLevel>>,
    /// Source of unique ids for URL elicitations.
    next_elicitation: Arc<AtomicU64>,
    /// Whether `open_vault` was already refused once in this session (then it succeeds).
    vault_consented: Arc<std::sync::atomic::AtomicBool>,
    tool_router: ToolRouter<FixtureServer>,
}

impl FixtureServer {
    fn new() -> Self {
        Self {
            log_level: Arc::new(Mutex::new(LoggingLevel::Info)),
            next_elicitation: Arc::new(AtomicU64::new(1)),
            vault_consented: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            tool_router: Self::tool_router() + Self::fault_router() + Self::change_router(),
        }
    }
}

#[tool_router]
impl FixtureServer {
    #[tool(description = "Return the text unchanged")]
    fn echo(&self, Parameters(TextArgs { text }): Parameters<TextArgs>) -> String {
        text
    }

    #[tool(
        description = "Run a query in a region (2026-07-28 clients send it as Mcp-Param-Region)"
    )]
    fn route_query(
        &self,
        Parameters(RouteArgs { region, query }): Parameters<RouteArgs>,
    ) -> String {
        format!("{region}: {query}")
    }

    #[tool(description = "Ask the user for their name (form elicitation) and greet them")]
    async fn ask_name(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        // Legacy: a server-to-client `elicitation/create`, awaited mid-call.
        let answer = context.peer.elicit::<UserName>("What is your name?").await;
        Ok(match reply(answer)? {
            Ok(user) => text(format!("Hello, {}!", user.name)),
            Err(why) => text(format!("No name given: {why}.")),
        })
    }

    #[tool(description = "Ask the user to confirm deleting a file (form elicitation)")]
    async fn confirm_delete(
        &self,
        peer: Peer<RoleServer>,
        Parameters(DeleteArgs { path }): Parameters<DeleteArgs>,
    ) -> Result<CallToolResult, McpError> {
        let requested_schema = ElicitationSchema::builder()
            .required_bool("confirm")
            .description("Tick to confirm")
            .build()
            .map_err(|e| McpError::internal_error(format!("bad schema: {e}"), None))?;
        let result = peer
            .create_elicitation(ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: format!("Really delete {path}?"),
                requested_schema,
            })
            .await
            .map_err(peer_error("elicitation"))?;
        let confirmed = result.action == ElicitationAction::Accept
            && result
                .content
                .as_ref()
                .and_then(|content| content.get("confirm"))
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false);
        Ok(text(if confirmed {
            format!("Deletion of {path} confirmed.")
        } else {
            format!("Deletion of {path} not confirmed.")
        }))
    }

    #[tool(description = "Send the user to a web page to connect an account (URL elicitation)")]
    async fn connect_account(&self, peer: Peer<RoleServer>) -> Result<CallToolResult, McpError> {
        let n = self.next_elicitation.fetch_add(1, Ordering::Relaxed);
        let elicitation_id = format!("connect-account-{n}");
        let url = url::Url::parse("https://accounts.example.com/connect")
            .map_err(|e| McpError::internal_error(format!("bad URL: {e}"), None))?;
        // Legacy: URL-mode elicitation correlated by a server-chosen elicitation id.
        let action = peer
            .elicit_url(
                "Connect your account to continue",
                url,
                elicitation_id.as_str(),
            )
            .await
            .map_err(|e| McpError::internal_error(format!("elicitation: {e}"), None))?;
        Ok(text(format!(
            "URL elicitation {elicitation_id}: {action:?}"
        )))
    }

    #[tool(
        description = "Open the vault; the first call per session fails with -32042 (URL elicitation required)"
    )]
    async fn open_vault(&self) -> Result<CallToolResult, McpError> {
        // Legacy (2025-11-25): refuse with URLElicitationRequiredError and expect the client to
        // send the user to the URL, then call again.
        if !self.vault_consented.swap(true, Ordering::SeqCst) {
            let n = self.next_elicitation.fetch_add(1, Ordering::Relaxed);
            return Err(McpError::url_elicitation_required(
                "Authorize vault access first",
                Some(serde_json::json!({
                    "elicitations": [{
                        "mode": "url",
                        "message": "Authorize vault access",
                        "url": "https://vault.example.com/authorize",
                        "elicitationId": format!("vault-{n}"),
                    }]
                })),
            ));
        }
        Ok(text("vault opened".to_owned()))
    }

    #[tool(description = "Summarize the text with the client's LLM (sampling)")]
    async fn summarize(
        &self,
        context: RequestContext<RoleServer>,
        Parameters(TextArgs { text: input }): Parameters<TextArgs>,
    ) -> Result<CallToolResult, McpError> {
        let prompt = format!("Summarize briefly:\n{input}");
        Ok(text(sample(&context.peer, &prompt).await?))
    }

    #[tool(description = "List the client's workspace roots, one URI per line")]
    async fn list_workspace_roots(
        &self,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        Ok(text(fetch_roots(&peer).await?.join("\n")))
    }

    #[tool(description = "Ask for a name, then for a favourite colour (two elicitations)")]
    async fn ask_twice(&self, peer: Peer<RoleServer>) -> Result<CallToolResult, McpError> {
        let user = match reply(peer.elicit::<UserName>("What is your name?").await)? {
            Ok(user) => user,
            Err(why) => return Ok(text(format!("No name given: {why}."))),
        };
        let question = format!("{}, what is your favourite colour?", user.name);
        Ok(match reply(peer.elicit::<FavoriteColor>(question).await)? {
            Ok(colour) => text(format!("{} likes {}", user.name, colour.color)),
            Err(why) => text(format!("No colour given: {why}.")),
        })
    }

    #[tool(description = "Elicit a name, sample a greeting and list roots, all at once")]
    async fn ask_three(&self, peer: Peer<RoleServer>) -> Result<CallToolResult, McpError> {
        // All three requests are in flight at the same time.
        let (name, greeting, roots) = tokio::join!(
            peer.elicit::<UserName>("What is your name?"),
            sample(&peer, "Greet the user in one sentence."),
            fetch_roots(&peer),
        );
        let name = match reply(name)? {
            Ok(user) => user.name,
            Err(why) => format!("(none: {why})"),
        };
        Ok(text(format!(
            "name: {name}\nsample: {}\nroots: {}",
            greeting?,
            roots?.join(", ")
        )))
    }

    #[tool(description = "Send an info log notification, then return the text")]
    async fn log_and_echo(
        &self,
        peer: Peer<RoleServer>,
        Parameters(TextArgs { text: input }): Parameters<TextArgs>,
    ) -> Result<CallToolResult, McpError> {
        // LoggingLevel is declared from least to most severe.
        if LoggingLevel::Info as u8 >= *self.log_level.lock().await as u8 {
            let data = serde_json::json!({ "tool": "log_and_echo", "text": input });
            peer.notify_logging_message(
                LoggingMessageNotificationParam::new(LoggingLevel::Info, data)
                    .with_logger("legacy-fixture"),
            )
            .await
            .map_err(peer_error("logging notification"))?;
        }
        Ok(text(input))
    }

    #[tool(description = "Send n progress notifications, then return \"counted n\"")]
    async fn slow_count(
        &self,
        peer: Peer<RoleServer>,
        meta: Meta,
        Parameters(CountArgs { n }): Parameters<CountArgs>,
    ) -> Result<CallToolResult, McpError> {
        if n > MAX_COUNT {
            return Err(McpError::invalid_params(
                format!("n must be at most {MAX_COUNT}"),
                None,
            ));
        }
        // Progress is only reported when the client asked for it.
        let token = meta.get_progress_token();
        for i in 1..=n {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if let Some(token) = &token {
                let progress = ProgressNotificationParam::new(token.clone(), f64::from(i))
                    .with_total(f64::from(n))
                    .with_message(format!("{i}/{n}"));
                peer.notify_progress(progress)
                    .await
                    .map_err(peer_error("progress notification"))?;
            }
        }
        Ok(text(format!("counted {n}")))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for FixtureServer {
    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .enable_logging()
                .build(),
        )
        // The newest protocol that rmcp 2.2 implements (its `LATEST`).
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
        .with_server_info(Implementation::new(
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions("Legacy push-style fixture server for mcp-migrate tests.")
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        tracing::info!(level = ?request.level, "client set the log level");
        *self.log_level.lock().await = request.level;
        Ok(())
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        tracing::info!("client reports that its roots changed");
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        subscribers()
            .entry(request.uri)
            .or_default()
            .push(context.peer);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let mut subscribers = subscribers();
        if let Some(peers) = subscribers.get_mut(&request.uri) {
            // Sessions are not told apart (a fixture: the proxy subscribes each URI on one
            // lane): one subscription of a client like this one goes.
            if let Some(at) = peers
                .iter()
                .position(|peer| peer.peer_info() == context.peer.peer_info())
            {
                peers.remove(at);
            }
        }
        Ok(())
    }
}

// ---- Helpers shared by several tools ----

/// Ask the client's LLM to complete `prompt` (legacy `sampling/createMessage`).
async fn sample(peer: &Peer<RoleServer>, prompt: &str) -> Result<String, McpError> {
    let mut params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 200)
        .with_system_prompt("You are a concise assistant.");
    // Let the client add this server's context to the prompt.
    params.include_context = Some(ContextInclusion::ThisServer);
    let result = peer
        .create_message(params)
        .await
        .map_err(peer_error("sampling"))?;
    result
        .message
        .content
        .first()
        .and_then(|block| block.as_text())
        .map(|block| block.text.clone())
        .ok_or_else(|| McpError::internal_error("the sampled message has no text", None))
}

/// The URIs of the client's roots (legacy `roots/list`).
async fn fetch_roots(peer: &Peer<RoleServer>) -> Result<Vec<String>, McpError> {
    let result = peer.list_roots().await.map_err(peer_error("roots/list"))?;
    Ok(result.roots.into_iter().map(|root| root.uri).collect())
}

/// Split a typed elicitation outcome into the answer, or why there is none.
/// Failures of the exchange itself become a tool error.
fn reply<T>(outcome: Result<Option<T>, ElicitationError>) -> Result<Result<T, String>, McpError> {
    match outcome {
        Ok(Some(value)) => Ok(Ok(value)),
        Ok(None) | Err(ElicitationError::NoContent) => Ok(Err("the reply was empty".into())),
        Err(ElicitationError::UserDeclined) => Ok(Err("the user declined".into())),
        Err(ElicitationError::UserCancelled) => Ok(Err("the user cancelled".into())),
        Err(e) => Err(McpError::internal_error(format!("elicitation: {e}"), None)),
    }
}

fn peer_error(what: &'static str) -> impl Fn(ServiceError) -> McpError {
    move |e| McpError::internal_error(format!("{what} failed: {e}"), None)
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

// ---- Entry point ----

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    mcp_legacy_fixture_support::run(
        "Legacy MCP fixture server (rmcp 2.2, push-style server-to-client requests).",
        FixtureServer::new,
    )
    .await
}

// ---- Tools for the proxy's fault and limit tests ----
// (Kept at the end of the file so the linter's snapshot of the code above keeps its lines.)

#[derive(Debug, Deserialize, JsonSchema)]
struct RoundsArgs {
    /// How many sampling requests to send, one after the other (each one is a proxy round).
    n: u32,
    /// Extra characters appended to each sampling prompt (to make large input requests).
    #[serde(default)]
    pad: usize,
    /// How long to wait, in milliseconds, after the last answer before returning.
    #[serde(default)]
    sleep_ms: u64,
}

#[tool_router(router = fault_router)]
impl FixtureServer {
    #[tool(
        description = "Send n sampling requests one after the other (prompt padded by `pad` characters), then wait `sleep_ms` ms and return \"rounds n\""
    )]
    async fn rounds(
        &self,
        peer: Peer<RoleServer>,
        Parameters(RoundsArgs { n, pad, sleep_ms }): Parameters<RoundsArgs>,
    ) -> Result<CallToolResult, McpError> {
        let padding = "x".repeat(pad.min(64 * 1024 * 1024));
        for i in 1..=n {
            sample(&peer, &format!("round {i}{padding}")).await?;
        }
        tokio::time::sleep(Duration::from_millis(sleep_ms)).await;
        Ok(text(format!("rounds {n}")))
    }
}

// ---- Change notifications (`subscriptions/listen` behind the proxy) ----

/// The sessions subscribed to each resource URI (`resources/subscribe`), in the whole process:
/// over HTTP every session of the server, over stdio the one.
fn subscribers() -> std::sync::MutexGuard<'static, HashMap<String, Vec<Peer<RoleServer>>>> {
    static SUBSCRIBERS: std::sync::OnceLock<
        std::sync::Mutex<HashMap<String, Vec<Peer<RoleServer>>>>,
    > = std::sync::OnceLock::new();
    SUBSCRIBERS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
}

#[derive(Debug, Deserialize, JsonSchema)]
struct TouchArgs {
    /// The resource URI whose subscribers are told it changed.
    uri: String,
}

#[tool_router(router = change_router)]
impl FixtureServer {
    #[tool(description = "Announce that the tool and resource lists changed (to this session)")]
    async fn announce_changes(&self, peer: Peer<RoleServer>) -> Result<String, McpError> {
        peer.notify_tool_list_changed()
            .await
            .map_err(|error| McpError::internal_error(error.to_string(), None))?;
        peer.notify_resource_list_changed()
            .await
            .map_err(|error| McpError::internal_error(error.to_string(), None))?;
        Ok("announced".into())
    }

    #[tool(description = "Tell every session subscribed to `uri` that the resource changed")]
    async fn touch_resource(
        &self,
        Parameters(TouchArgs { uri }): Parameters<TouchArgs>,
    ) -> Result<String, McpError> {
        let peers = subscribers().get(&uri).cloned().unwrap_or_default();
        let mut told = 0;
        for peer in peers {
            if peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri.clone()))
                .await
                .is_ok()
            {
                told += 1;
            }
        }
        Ok(format!("told {told}"))
    }
}
