//! Shared by `front_http.rs` and `front_stdio.rs`: a scripted [`Handler`], request builders and
//! the 2026-07-28 schema.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcp_mrtr_proxy::front::validate::meta_keys;
use mcp_mrtr_proxy::jsonrpc::{codes, ErrorObject, Message};
use mcp_mrtr_proxy::request::{FrontRequest, Handler, ResponseSink};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// What the test handler reports about the requests it serves.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A request reached the handler.
    Started(Value),
    /// `sink.closed()` resolved for this request id.
    Closed(Value),
    /// Whether a notification after the close still claimed to be delivered.
    NotifyAfterClose(Value, bool),
    /// The handler's work after its final response ran to its end.
    WorkedAfterFinal(Value),
}

/// Behaviour by `tools/call` name (every other method is echoed):
/// - `echo`: a complete result describing the request;
/// - `progress`: two `notifications/progress`, then the result;
/// - `missing_capability`: `-32021` (`requiredCapabilities: {elicitation: {}}`);
/// - `hang`: one progress notification, then waits for the client to go away;
/// - `hang_quiet`: waits for the client to go away without sending anything;
/// - `hang_then_notify`: like `hang`, then tries one more notification;
/// - `drop` / `drop_after_progress`: drops the sink (after one notification);
/// - `panic` / `panic_sync`: panics inside the future / while building it;
/// - `slow`: `arguments.steps` notifications `arguments.delay_ms` apart, then the result;
/// - `work_after_final`: the result, then 50 ms of work (a sleep) before the handler ends.
pub struct TestHandler {
    pub ready: AtomicBool,
    events: mpsc::UnboundedSender<Event>,
}

impl TestHandler {
    pub fn new() -> (std::sync::Arc<Self>, mpsc::UnboundedReceiver<Event>) {
        let (events, rx) = mpsc::unbounded_channel();
        (
            std::sync::Arc::new(TestHandler {
                ready: AtomicBool::new(true),
                events,
            }),
            rx,
        )
    }

    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::SeqCst);
    }
}

fn progress(request: &FrontRequest, value: u64) -> Message {
    Message::Notification {
        method: "notifications/progress".into(),
        params: Some(json!({
            "progressToken": request.progress_token.clone().unwrap_or(json!("none")),
            "progress": value,
        })),
    }
}

fn echo(request: &FrontRequest) -> Value {
    json!({
        "resultType": "complete",
        "method": request.method,
        "params": request.params,
        "principal": request.principal.label(),
        "clientCapabilities": request.client_capabilities_value(),
        "clientInfo": request.client_info,
        "logLevel": request.log_level,
        "progressToken": request.progress_token,
    })
}

impl Handler for TestHandler {
    fn handle(&self, request: FrontRequest, mut sink: ResponseSink) -> BoxFuture<'static, ()> {
        let events = self.events.clone();
        let _ = events.send(Event::Started(request.id.clone()));
        let name = request
            .params
            .get("name")
            .and_then(Value::as_str)
            .filter(|_| request.method == "tools/call")
            .unwrap_or("echo")
            .to_owned();
        if name == "panic_sync" {
            panic!("scripted panic while building the future");
        }
        Box::pin(async move {
            let id = request.id.clone();
            match name.as_str() {
                "progress" => {
                    sink.notify(progress(&request, 1)).await;
                    sink.notify(progress(&request, 2)).await;
                    sink.finish(id, Ok(echo(&request))).await;
                }
                "missing_capability" => {
                    let error = ErrorObject::new(
                        codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                        "this tool needs elicitation",
                    )
                    .with_data(json!({"requiredCapabilities": {"elicitation": {}}}));
                    sink.finish(id, Err(error)).await;
                }
                "hang" | "hang_quiet" | "hang_then_notify" => {
                    if name != "hang_quiet" {
                        sink.notify(progress(&request, 1)).await;
                    }
                    sink.closed().await;
                    let _ = events.send(Event::Closed(id.clone()));
                    if name == "hang_then_notify" {
                        let delivered = sink.notify(progress(&request, 2)).await;
                        let _ = events.send(Event::NotifyAfterClose(id, delivered));
                    }
                }
                "drop" => drop(sink),
                "drop_after_progress" => {
                    sink.notify(progress(&request, 1)).await;
                    drop(sink);
                }
                "panic" => panic!("scripted panic inside the handler"),
                "slow" => {
                    let arguments = request.params.get("arguments").cloned().unwrap_or_default();
                    let steps = arguments.get("steps").and_then(Value::as_u64).unwrap_or(3);
                    let delay = arguments
                        .get("delay_ms")
                        .and_then(Value::as_u64)
                        .unwrap_or(20);
                    for step in 1..=steps {
                        tokio::time::sleep(Duration::from_millis(delay)).await;
                        sink.notify(progress(&request, step)).await;
                    }
                    sink.finish(id, Ok(echo(&request))).await;
                }
                "work_after_final" => {
                    sink.finish(id.clone(), Ok(echo(&request))).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let _ = events.send(Event::WorkedAfterFinal(id));
                }
                _ => sink.finish(id, Ok(echo(&request))).await,
            }
        })
    }

    fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }
}

/// Waits for the next event matching `pick`, up to 30 s (a loaded 2-core machine).
pub async fn expect_event(
    events: &mut mpsc::UnboundedReceiver<Event>,
    pick: impl Fn(&Event) -> bool,
) -> Event {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(event)) if pick(&event) => return event,
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the handler's event channel closed"),
            Err(_) => panic!("no matching handler event within 30 s"),
        }
    }
}

pub const VERSION: &str = "2026-07-28";

/// `params` for `method` with a valid `_meta`, merged with `extra`.
pub fn params(method: &str, extra: Value) -> Value {
    let mut params = json!({
        "_meta": {
            meta_keys::PROTOCOL_VERSION: VERSION,
            meta_keys::CLIENT_CAPABILITIES: {},
            meta_keys::CLIENT_INFO: {"name": "front-tests", "version": "0"},
        }
    });
    match method {
        "tools/call" | "prompts/get" => params["name"] = json!("echo"),
        "resources/read" => params["uri"] = json!("file:///a.txt"),
        _ => {}
    }
    if let Value::Object(extra) = extra {
        for (key, value) in extra {
            if key == "_meta" {
                for (meta_key, meta_value) in value.as_object().cloned().unwrap_or_default() {
                    params["_meta"][meta_key] = meta_value;
                }
            } else {
                params[key] = value;
            }
        }
    }
    params
}

pub fn request(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A tools/call request for the scripted tool `name`.
pub fn call(id: Value, name: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        params("tools/call", json!({"name": name, "arguments": arguments})),
    )
}

/// The vendored 2026-07-28 `schema.json` (source and licence in `tests/schemas/README.md`).
fn schema_path() -> PathBuf {
    mcp_migrate_workspace_bins::workspace_root(env!("CARGO_MANIFEST_DIR"))
        .join("tests/schemas/mcp-2026-07-28.schema.json")
}

/// Validators for `#/$defs/<name>` of the 2026-07-28 schema.
pub struct Schema {
    defs: Value,
}

impl Schema {
    pub fn load() -> Self {
        let text = std::fs::read_to_string(schema_path()).unwrap();
        let schema: Value = serde_json::from_str(&text).unwrap();
        Schema {
            defs: schema["$defs"].clone(),
        }
    }

    pub fn errors(&self, definition: &str, instance: &Value) -> Vec<String> {
        assert!(
            self.defs.get(definition).is_some(),
            "no `{definition}` in the schema"
        );
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": self.defs,
            "$ref": format!("#/$defs/{definition}"),
        });
        let validator = jsonschema::validator_for(&root).unwrap();
        validator
            .iter_errors(instance)
            .map(|error| format!("{error} at {}", error.instance_path))
            .collect()
    }

    /// Asserts that `body` is a schema-valid JSON-RPC error response, and for the 2026-07-28
    /// codes also an instance of their specific error type.
    pub fn assert_error_response(&self, body: &Value) {
        let mut definitions = vec!["JSONRPCErrorResponse", "JSONRPCMessage"];
        match body["error"]["code"].as_i64() {
            Some(codes::HEADER_MISMATCH) => definitions.push("HeaderMismatchError"),
            Some(codes::MISSING_REQUIRED_CLIENT_CAPABILITY) => {
                definitions.push("MissingRequiredClientCapabilityError")
            }
            Some(codes::UNSUPPORTED_PROTOCOL_VERSION) => {
                definitions.push("UnsupportedProtocolVersionError")
            }
            _ => {}
        }
        for definition in definitions {
            let errors = self.errors(definition, body);
            assert!(
                errors.is_empty(),
                "{body} is not a {definition}: {errors:#?}"
            );
        }
    }
}
