//! The tools (and the prompt) that need something from the client, written the legacy way: the
//! handler pushes `elicitation/create`, `sampling/createMessage` or `roots/list` to the client
//! and awaits the reply before it answers its own request.
//!
//! Behind `mcp-mrtr-proxy` each push becomes an `inputRequests` entry of an `input_required`
//! round. The proxy names entries `elicitation_1`, `sampling_1`, `roots_1`, ... unless the
//! request carries the key it wants in `_meta["io.github.mcp-migrate/inputKey"]`; this server
//! sets that hint ([`keyed`]) on its elicitation and sampling requests, so the scenarios see
//! the keys of the suite's reference server (`user_name`, ...). rmcp 2.2 cannot put `_meta` on
//! `roots/list` (its parameterless requests drop `_meta` when serialized), so roots requests
//! get the proxy's default key `roots_1`.

use legacy_rmcp::{
    model::{
        CallToolResult, CreateMessageRequestParams, ElicitRequestParams, ElicitResult,
        ElicitationAction, GetPromptResult, JsonObject, LoggingLevel,
        LoggingMessageNotificationParam, Meta, ProgressNotificationParam, SamplingMessage,
    },
    service::RequestContext,
    ErrorData as McpError, Peer, RoleServer, ServiceError,
};
use serde_json::{json, Value};
use std::time::Duration;

use crate::catalog::from_json;

/// The `_meta` key the proxy reads to name an `inputRequests` entry.
const INPUT_KEY_HINT: &str = "io.github.mcp-migrate/inputKey";

/// Runs the push-style tool `name`; `None` when there is no such tool here.
pub async fn call_tool(
    name: &str,
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
    log_level: LoggingLevel,
) -> Option<Result<CallToolResult, McpError>> {
    let peer = &context.peer;
    let outcome = match name {
        // ---- 2025-11-25 scenarios (the suite's client answers the pushes itself) ----
        "test_tool_with_logging" => with_logging(peer, log_level).await,
        "test_tool_with_progress" => with_progress(context).await,
        "test_sampling" => {
            let prompt = string_argument(arguments, "prompt");
            sample(peer, None, &prompt, 100)
                .await
                .map(|text| format!("LLM response: {text}"))
        }
        "test_elicitation" => {
            let message = string_argument(arguments, "message");
            let schema = json!({
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"},
                },
                "required": ["username", "email"],
            });
            ask(peer, None, &message, schema)
                .await
                .map(|reply| format!("User response: {}", describe(&reply)))
        }
        "test_elicitation_sep1034_defaults" => ask(
            peer,
            None,
            "Please review and update the form fields with defaults",
            sep1034_defaults_schema(),
        )
        .await
        .map(|reply| format!("Elicitation completed: {}", describe(&reply))),
        "test_elicitation_sep1330_enums" => ask(
            peer,
            None,
            "Please select options from the enum fields",
            sep1330_enums_schema(),
        )
        .await
        .map(|reply| format!("Elicitation completed: {}", describe(&reply))),

        // ---- 2026-07-28 MRTR scenarios (the proxy turns the pushes into rounds) ----
        "test_input_required_result_elicitation" => {
            ask_name(peer, "user_name", "What is your name?")
                .await
                .map(|name| match name {
                    Ok(name) => format!("Hello, {name}!"),
                    Err(why) => format!("No name given: {why}."),
                })
        }
        "test_input_required_result_sampling" => sample(
            peer,
            Some("capital_question"),
            "What is the capital of France?",
            100,
        )
        .await
        .map(|text| format!("Sampling result: {text}")),
        "test_input_required_result_list_roots" => roots(peer)
            .await
            .map(|roots| format!("Found {} root(s)", roots.len())),
        "test_input_required_result_request_state" => {
            // The legacy "state" is the call itself, paused while it waits for the answer.
            confirm(peer, "confirm").await.map(|ok| {
                if ok {
                    "state-ok: the paused call resumed with the confirmation".to_owned()
                } else {
                    "not confirmed".to_owned()
                }
            })
        }
        "test_input_required_result_multiple_inputs" => multiple_inputs(peer).await,
        "test_input_required_result_multi_round" => multi_round(peer).await,
        "test_input_required_result_tampered_state" => confirm(peer, "confirm").await.map(|ok| {
            if ok {
                "integrity-ok: confirmed".to_owned()
            } else {
                "not confirmed".to_owned()
            }
        }),
        "test_input_required_result_capabilities" => only_declared(peer).await,

        // ---- server-stateless diagnostics ----
        // Needs sampling whatever the client declared: the proxy must refuse it with -32021.
        "test_missing_capability" => sample(peer, Some("completion"), "Say hello", 20)
            .await
            .map(|text| format!("Sampled: {text}")),
        // Pushes an elicitation: behind the proxy it must never reach the response stream as a
        // request of its own.
        "test_streaming_elicitation" => confirm(peer, "continue")
            .await
            .map(|_| "Streaming complete".to_owned()),
        // Logs mid-call: behind the proxy, clients that did not ask for logs must not get it.
        "test_logging_tool" => log(
            peer,
            log_level,
            LoggingLevel::Info,
            "Diagnostic trace logging activated",
        )
        .await
        .map(|()| "Logging evaluated".to_owned()),
        // Announce a tool / prompt list change to this session: behind the proxy it must reach
        // the `subscriptions/listen` streams that asked for it, and only those.
        // The proxy's end-to-end flows (tests/tests/proxy_sdk_flows.rs), on every SDK's server.
        "test_url_elicitation" => peer
            .create_elicitation(ElicitRequestParams::UrlElicitationParams {
                meta: Some(keyed("consent")),
                message: "Open the link to continue".to_owned(),
                url: "https://example.com/consent".to_owned(),
                elicitation_id: "consent-1".to_owned(),
            })
            .await
            .map(|reply| format!("URL elicitation: {}", action(&reply)))
            .map_err(peer_error("elicitation")),
        "test_cancellable" => {
            for _ in 0..100 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok("not cancelled".to_owned())
        }
        "test_trigger_tool_change" => peer
            .notify_tool_list_changed()
            .await
            .map(|()| "tool list change announced".to_owned())
            .map_err(|error| McpError::internal_error(error.to_string(), None)),
        "test_trigger_prompt_change" => peer
            .notify_prompt_list_changed()
            .await
            .map(|()| "prompt list change announced".to_owned())
            .map_err(|error| McpError::internal_error(error.to_string(), None)),
        _ => return None,
    };
    Some(
        outcome.map(|text| {
            CallToolResult::success(vec![legacy_rmcp::model::ContentBlock::text(text)])
        }),
    )
}

/// Runs the push-style prompt `name`; `None` when there is no such prompt here.
pub async fn get_prompt(
    name: &str,
    context: &RequestContext<RoleServer>,
) -> Option<Result<GetPromptResult, McpError>> {
    if name != "test_input_required_result_prompt" {
        return None;
    }
    let schema = json!({
        "type": "object",
        "properties": {"context": {"type": "string"}},
        "required": ["context"],
    });
    let outcome = ask(
        &context.peer,
        Some("user_context"),
        "What context should the prompt use?",
        schema,
    )
    .await
    .map(|reply| {
        let context = accepted_field(&reply, "context").unwrap_or_else(|| "none".to_owned());
        from_json(json!({
            "messages": [{
                "role": "user",
                "content": {"type": "text", "text": format!("Prompt with context: {context}")},
            }],
        }))
    });
    Some(outcome)
}

// ---- The tools with more than one push ----

/// Three requests in flight at once; behind the proxy they make one round.
async fn multiple_inputs(peer: &Peer<RoleServer>) -> Result<String, McpError> {
    let (name, greeting, roots) = tokio::join!(
        ask_name(peer, "user_name", "What is your name?"),
        sample(peer, Some("greeting"), "Generate a greeting", 50),
        roots(peer),
    );
    let name = name?.unwrap_or_else(|why| format!("(none: {why})"));
    Ok(format!(
        "Name: {name}; Greeting: {}; Roots: {}",
        greeting?,
        roots?.len()
    ))
}

/// Two questions in a row; behind the proxy, two rounds.
async fn multi_round(peer: &Peer<RoleServer>) -> Result<String, McpError> {
    let name = match ask_name(peer, "step1", "Step 1: What is your name?").await? {
        Ok(name) => name,
        Err(why) => return Ok(format!("No name given: {why}.")),
    };
    let schema = json!({
        "type": "object",
        "properties": {"color": {"type": "string"}},
        "required": ["color"],
    });
    let reply = ask(
        peer,
        Some("step2"),
        "Step 2: What is your favorite color?",
        schema,
    )
    .await?;
    Ok(match accepted_field(&reply, "color") {
        Some(color) => format!("Multi-round complete for {name} who likes {color}"),
        None => format!("{name} gave no colour ({})", action(&reply)),
    })
}

/// Asks only for what the client declared at `initialize`: an elicitation if it can elicit, a
/// sampling request if it can sample, both at once if it can do both.
async fn only_declared(peer: &Peer<RoleServer>) -> Result<String, McpError> {
    let (can_elicit, can_sample) = peer
        .peer_info()
        .map(|info| {
            (
                info.capabilities.elicitation.is_some(),
                info.capabilities.sampling.is_some(),
            )
        })
        .unwrap_or((false, false));
    let value_schema = json!({
        "type": "object",
        "properties": {"value": {"type": "string"}},
        "required": ["value"],
    });
    let elicited = async {
        if can_elicit {
            ask(
                peer,
                Some("elicit_input"),
                "Elicitation input",
                value_schema,
            )
            .await
            .map(|_| Some("elicit_input"))
        } else {
            Ok(None)
        }
    };
    let sampled = async {
        if can_sample {
            sample(peer, Some("sample_input"), "Sample request", 50)
                .await
                .map(|_| Some("sample_input"))
        } else {
            Ok(None)
        }
    };
    let (elicited, sampled) = tokio::join!(elicited, sampled);
    let received: Vec<&str> = [elicited?, sampled?].into_iter().flatten().collect();
    Ok(if received.is_empty() {
        "No supported capabilities declared".to_owned()
    } else {
        format!("capabilities-ok: received {}", received.join(","))
    })
}

/// Three info logs, 50 ms apart (tools-call-with-logging).
async fn with_logging(peer: &Peer<RoleServer>, level: LoggingLevel) -> Result<String, McpError> {
    for (i, message) in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        log(peer, level, LoggingLevel::Info, message).await?;
    }
    Ok("Tool with logging executed successfully".to_owned())
}

/// Progress 0, 50 and 100 of 100, 50 ms apart, when the call carries a progress token; returns
/// the token (tools-call-with-progress).
async fn with_progress(context: &RequestContext<RoleServer>) -> Result<String, McpError> {
    let token = context.meta.get_progress_token();
    for (i, progress) in [0u32, 50, 100].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if let Some(token) = &token {
            let notification = ProgressNotificationParam::new(token.clone(), f64::from(progress))
                .with_total(100.0)
                .with_message(format!("Completed step {progress} of 100"));
            context
                .peer
                .notify_progress(notification)
                .await
                .map_err(peer_error("progress notification"))?;
        }
    }
    Ok(match token {
        Some(token) => match serde_json::to_value(&token) {
            Ok(Value::String(text)) => text,
            Ok(other) => other.to_string(),
            Err(_) => "progress token".to_owned(),
        },
        None => "no progress token".to_owned(),
    })
}

// ---- Legacy pushes ----

/// `_meta` that asks the proxy to name the `inputRequests` entry `key`.
fn keyed(key: &str) -> Meta {
    let mut meta = Meta::new();
    meta.0.insert(INPUT_KEY_HINT.to_owned(), key.into());
    meta
}

/// Legacy `elicitation/create` (form mode), awaited mid-call.
async fn ask(
    peer: &Peer<RoleServer>,
    key: Option<&str>,
    message: &str,
    schema: Value,
) -> Result<ElicitResult, McpError> {
    peer.create_elicitation(ElicitRequestParams::FormElicitationParams {
        meta: key.map(keyed),
        message: message.to_owned(),
        requested_schema: from_json(schema),
    })
    .await
    .map_err(peer_error("elicitation"))
}

/// Asks for a `name`; `Err(why)` inside when the user gave none.
async fn ask_name(
    peer: &Peer<RoleServer>,
    key: &str,
    message: &str,
) -> Result<Result<String, String>, McpError> {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    });
    let reply = ask(peer, Some(key), message, schema).await?;
    Ok(accepted_field(&reply, "name").ok_or_else(|| format!("the user chose {}", action(&reply))))
}

/// Asks for a boolean `ok`; whether the user accepted with `ok: true`.
async fn confirm(peer: &Peer<RoleServer>, key: &str) -> Result<bool, McpError> {
    let schema = json!({
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
    });
    let reply = ask(peer, Some(key), "Please confirm", schema).await?;
    Ok(reply.action == ElicitationAction::Accept
        && reply
            .content
            .as_ref()
            .and_then(|content| content.get("ok"))
            .and_then(Value::as_bool)
            .unwrap_or(false))
}

/// Legacy `sampling/createMessage`, awaited mid-call; the sampled text.
async fn sample(
    peer: &Peer<RoleServer>,
    key: Option<&str>,
    prompt: &str,
    max_tokens: u32,
) -> Result<String, McpError> {
    let mut params =
        CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], max_tokens);
    params.meta = key.map(keyed);
    let result = peer
        .create_message(params)
        .await
        .map_err(peer_error("sampling"))?;
    Ok(result
        .message
        .content
        .first()
        .and_then(|block| block.as_text())
        .map(|block| block.text.clone())
        .unwrap_or_else(|| "(no text)".to_owned()))
}

/// Legacy `roots/list`, awaited mid-call; the root URIs.
async fn roots(peer: &Peer<RoleServer>) -> Result<Vec<String>, McpError> {
    let result = peer.list_roots().await.map_err(peer_error("roots/list"))?;
    Ok(result.roots.into_iter().map(|root| root.uri).collect())
}

/// Legacy `notifications/message`, unless `logging/setLevel` asked for more severe messages only.
async fn log(
    peer: &Peer<RoleServer>,
    threshold: LoggingLevel,
    level: LoggingLevel,
    message: &str,
) -> Result<(), McpError> {
    // LoggingLevel is declared from least to most severe.
    if (level as u8) < (threshold as u8) {
        return Ok(());
    }
    peer.notify_logging_message(
        LoggingMessageNotificationParam::new(level, message.into())
            .with_logger("conformance-test-server"),
    )
    .await
    .map_err(peer_error("logging notification"))
}

// ---- Small helpers ----

fn string_argument(arguments: &JsonObject, key: &str) -> String {
    arguments
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// `accept`, `decline` or `cancel`.
fn action(reply: &ElicitResult) -> String {
    match serde_json::to_value(&reply.action) {
        Ok(Value::String(action)) => action,
        _ => format!("{:?}", reply.action),
    }
}

/// `action=accept, content={...}`
fn describe(reply: &ElicitResult) -> String {
    let content = reply.content.clone().unwrap_or_else(|| json!({}));
    format!("action={}, content={content}", action(reply))
}

/// A string field of an accepted form.
fn accepted_field(reply: &ElicitResult, field: &str) -> Option<String> {
    if reply.action != ElicitationAction::Accept {
        return None;
    }
    reply
        .content
        .as_ref()?
        .get(field)?
        .as_str()
        .map(str::to_owned)
}

fn peer_error(what: &'static str) -> impl Fn(ServiceError) -> McpError {
    move |e| McpError::internal_error(format!("{what} failed: {e}"), None)
}

/// SEP-1034: a default value for every primitive type.
fn sep1034_defaults_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true},
        },
        "required": [],
    })
}

/// SEP-1330: the five enum schema variants.
fn sep1330_enums_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"],
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ],
                },
            },
        },
        "required": [],
    })
}

#[cfg(test)]
mod tests {
    use legacy_rmcp::model::ElicitationSchema;

    use super::*;

    #[test]
    fn elicitation_schemas_round_trip_through_rmcp() {
        for schema in [sep1034_defaults_schema(), sep1330_enums_schema()] {
            let typed: ElicitationSchema = from_json(schema.clone());
            let back = serde_json::to_value(&typed).unwrap();
            for (name, property) in schema["properties"].as_object().unwrap() {
                for (keyword, value) in property.as_object().unwrap() {
                    let kept = &back["properties"][name][keyword];
                    // Numbers may come back as floats (30 -> 30.0): compare as f64.
                    let same = kept == value
                        || (kept.as_f64().is_some() && kept.as_f64() == value.as_f64());
                    assert!(same, "{name}.{keyword}: {value} became {kept}");
                }
            }
        }
    }

    #[test]
    fn the_key_hint_is_the_proxy_s() {
        let meta = keyed("user_name");
        assert_eq!(meta.0[INPUT_KEY_HINT], "user_name");
    }
}
