//! Pure translation helpers between the 2026-07-28 front and the legacy server: result
//! decoration (`resultType`, `ttlMs`, `cacheScope`; T5), legacy error codes (T19), legacy params
//! (MRTR fields and 2026-only `_meta` removed), input requests and their answers (T8, T10, T11,
//! T20), the `server/discover` capabilities (T21). No I/O, no state.

use serde_json::{json, Map, Value};

use crate::backend::BackendError;
use crate::capabilities::CapabilityProfile;
use crate::jsonrpc::{codes, Added, ErrorObject, RawResult, Reply};

/// Results that must carry `ttlMs` and `cacheScope` (SEP-2549).
const CACHEABLE: &[&str] = &[
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];
/// Legacy requests that become MRTR input requests.
pub(super) const INPUT_METHODS: &[&str] =
    &["elicitation/create", "sampling/createMessage", "roots/list"];
/// `_meta` key a legacy server may set on its request to choose the `inputRequests` key.
pub const INPUT_KEY_HINT: &str = "io.github.mcp-migrate/inputKey";

pub(super) fn invalid_params(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(codes::INVALID_PARAMS, message)
}

pub(super) fn internal(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(codes::INTERNAL_ERROR, message)
}

/// The client's error for a failure on the legacy side: the legacy server's refusal of the
/// caller's credentials keeps its HTTP status and challenge ([`crate::credentials::refusal`]);
/// a new caller beyond `--max-credential-pools` is refused retryably; anything else `-32603`.
pub(super) fn backend_failure(error: BackendError) -> ErrorObject {
    match error {
        BackendError::Unauthorized { status, challenge } => {
            crate::credentials::refusal(status, challenge.as_deref())
        }
        BackendError::CallerCapacity { max } => crate::limits::caller_capacity_refusal(max),
        error => internal(error.to_string()),
    }
}

/// [`backend_failure`] of a call that had paused: the legacy server's refusal of the caller's
/// credentials says that the call is lost ([`crate::credentials::refusal_at_resume`]).
pub(super) fn resumed_call_failure(error: BackendError) -> ErrorObject {
    match error {
        BackendError::Unauthorized { status, challenge } => {
            crate::credentials::refusal_at_resume(status, challenge.as_deref())
        }
        error => backend_failure(error),
    }
}

pub(super) type LegacyOutcome = Result<
    Result<Result<Reply, ErrorObject>, BackendError>,
    tokio::sync::oneshot::error::RecvError,
>;

pub(super) use crate::refusals::lost_call;

pub(super) fn flatten(response: LegacyOutcome) -> Result<Reply, ErrorObject> {
    match response {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(error)) => Err(backend_failure(error)),
        Err(_) => Err(internal(BackendError::Crashed.to_string())),
    }
}

/// The `server/discover` capabilities for the legacy server's `initialize` capabilities: without
/// `tasks` (T21). `listChanged` and `resources.subscribe` stay: in 2026-07-28 they say what
/// `subscriptions/listen` delivers, and the proxy serves it from the legacy notifications (T16).
pub(super) fn front_capabilities(legacy: Option<&Value>) -> Value {
    let mut capabilities = legacy.cloned().unwrap_or_else(|| json!({}));
    if let Some(map) = capabilities.as_object_mut() {
        map.remove("tasks");
    }
    capabilities
}

/// Adds what 2026-07-28 requires on results: `resultType`, and `ttlMs`/`cacheScope` on cacheable
/// ones (`private`, 0 ms: the proxy cannot know whether legacy lists differ per user).
pub(super) fn decorate_result(method: &str, mut result: Value) -> Value {
    if let Some(map) = result.as_object_mut() {
        map.entry("resultType").or_insert_with(|| "complete".into());
        if CACHEABLE.contains(&method) {
            map.entry("ttlMs").or_insert_with(|| 0.into());
            map.entry("cacheScope").or_insert_with(|| "private".into());
        }
    }
    result
}

/// Which of the members [`decorate_result`] adds a raw result object has already (each read
/// without building a `Value`), for a result whose read did not learn it. A duplicate of one of
/// them fails the read (then the `Value` path, whose last duplicate wins, decides).
#[derive(serde::Deserialize)]
struct DecoratedMembers {
    #[serde(rename = "resultType", default)]
    result_type: Present,
    #[serde(rename = "ttlMs", default)]
    ttl_ms: Present,
    #[serde(rename = "cacheScope", default)]
    cache_scope: Present,
}

/// Whether a member is there, whatever its value (`null` included, as `Map::entry` sees it).
#[derive(Default)]
struct Present(bool);

impl<'de> serde::Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer)?;
        Ok(Present(true))
    }
}

/// Which of `resultType`, `ttlMs`, `cacheScope` a raw result object has: learned when it was
/// read (jsonrpc/raw.rs), else read from its text now; `None` when one is there twice.
fn decorated_members(raw: &RawResult) -> Option<[bool; 3]> {
    let known = [Added::ResultType, Added::TtlMs, Added::CacheScope].map(|added| raw.has(added));
    if let [Some(result_type), Some(ttl_ms), Some(cache_scope)] = known {
        return Some([result_type, ttl_ms, cache_scope]);
    }
    let members = serde_json::from_str::<DecoratedMembers>(raw.text()).ok()?;
    Some([
        members.result_type.0,
        members.ttl_ms.0,
        members.cache_scope.0,
    ])
}

/// [`decorate_result`] for a reply: a raw result object gets the same members added to its text
/// (no `Value` tree); anything unusual falls back to the `Value` path.
pub(super) fn decorate_reply(method: &str, reply: Reply) -> Result<Reply, ErrorObject> {
    let mut raw: RawResult = match reply {
        Reply::Tree(result) => return Ok(Reply::Tree(decorate_result(method, result))),
        Reply::Raw(raw) if !raw.is_object() => return Ok(Reply::Raw(raw)),
        Reply::Raw(raw) => raw,
    };
    let Some([result_type, ttl_ms, cache_scope]) = decorated_members(&raw) else {
        let result = Reply::Raw(raw).into_value()?;
        return Ok(Reply::Tree(decorate_result(method, result)));
    };
    if !result_type {
        raw.push(Added::ResultType);
    }
    if CACHEABLE.contains(&method) {
        if !ttl_ms {
            raw.push(Added::TtlMs);
        }
        if !cache_scope {
            raw.push(Added::CacheScope);
        }
    }
    Ok(Reply::Raw(raw))
}

/// Legacy error codes 2026-07-28 forbids or reserves (T19).
pub(super) fn translate_error(mut error: ErrorObject) -> ErrorObject {
    match error.code {
        codes::LEGACY_RESOURCE_NOT_FOUND => error.code = codes::INVALID_PARAMS,
        code if (-32099..=-32020).contains(&code) => {
            error.message = format!("{} (legacy error code {code})", error.message);
            error.code = codes::INTERNAL_ERROR;
        }
        _ => {}
    }
    error
}

/// The front answer when the user declined a URL elicitation of a -32042 round.
pub(super) fn declined_url_outcome(method: &str) -> Result<Value, ErrorObject> {
    let message = "the user did not complete the URL elicitation the legacy server requires";
    if method == "tools/call" {
        Ok(json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": message}],
            "isError": true,
        }))
    } else {
        Err(internal(message))
    }
}

/// The `inputResponses` object of front request params (empty when absent or not an object).
pub(super) fn input_responses(params: &impl crate::params::ParamsRead) -> Map<String, Value> {
    params
        .member("inputResponses")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// How the proxy refuses a legacy input request on the legacy side.
pub(super) fn refusal_for(method: &str) -> Result<Value, ErrorObject> {
    match method {
        "elicitation/create" => Ok(json!({"action": "cancel"})),
        _ => Err(internal("the client cannot serve this request")),
    }
}

/// The `InputRequest` for a legacy request: `{method, params}` without `jsonrpc`/`id`, legacy-only
/// fields removed (`elicitationId`, `task`, `_meta`), deprecated `includeContext` values dropped
/// unless the client declared `sampling.context` (T8, T11).
pub(super) fn input_request(method: &str, params: &Value, profile: &CapabilityProfile) -> Value {
    let mut params = params.clone();
    if let Some(map) = params.as_object_mut() {
        map.remove("_meta");
        map.remove("task");
        map.remove("elicitationId");
        if method == "sampling/createMessage" && !profile.sampling_context {
            if let Some(context) = map.get("includeContext").and_then(Value::as_str) {
                if context != "none" {
                    map.insert("includeContext".into(), "none".into());
                }
            }
        }
    }
    if method == "roots/list" && params.as_object().is_none_or(Map::is_empty) {
        json!({"method": method})
    } else {
        json!({"method": method, "params": params})
    }
}

/// Checks a client's answer against the input request kind and turns it into the legacy result;
/// `None` when it is not a valid answer (it is then asked again).
pub(super) fn legacy_response(
    method: &str,
    legacy_params: &Value,
    answer: &Value,
) -> Option<Value> {
    let object = answer.as_object()?;
    match method {
        "elicitation/create" => {
            let action = object.get("action")?.as_str()?;
            if !matches!(action, "accept" | "decline" | "cancel") {
                return None;
            }
            let mut result = json!({"action": action});
            let url_mode = legacy_params.get("mode").and_then(Value::as_str) == Some("url");
            if action == "accept" && !url_mode {
                let content = object.get("content")?.as_object()?;
                result["content"] = Value::Object(content.clone());
            }
            Some(result)
        }
        "sampling/createMessage" => {
            object.get("role")?.as_str()?;
            object.get("content")?;
            let mut result = answer.clone();
            if let Some(map) = result.as_object_mut() {
                map.remove("resultType");
                map.entry("model").or_insert_with(|| "unknown".into());
            }
            Some(result)
        }
        "roots/list" => {
            object.get("roots")?.as_array()?;
            let mut result = answer.clone();
            if let Some(map) = result.as_object_mut() {
                map.remove("resultType");
            }
            Some(result)
        }
        _ => None,
    }
}

pub(super) fn level_rank(level: &str) -> u8 {
    match level {
        "debug" => 0,
        "info" => 1,
        "notice" => 2,
        "warning" => 3,
        "error" => 4,
        "critical" => 5,
        "alert" => 6,
        "emergency" => 7,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Message;

    #[test]
    fn results_get_result_type_and_caching_fields() {
        let listed = decorate_result("tools/list", json!({"tools": []}));
        assert_eq!(
            listed,
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        );
        let called = decorate_result("tools/call", json!({"content": []}));
        assert_eq!(called, json!({"content": [], "resultType": "complete"}));
    }

    /// The raw path adds exactly what the `Value` path adds, for every method and shape.
    #[test]
    fn raw_results_are_decorated_like_value_results() {
        for method in ["tools/call", "tools/list", "resources/read"] {
            for result in [
                r#"{"content":[]}"#,
                "{}",
                r#"{"resultType":"input_required","ttlMs":5}"#,
                r#"{"resultType":null,"cacheScope":"public"}"#,
                r#"{"resultType":"a","resultType":"b"}"#,
                r#"{"a":{"resultType":1}}"#,
                "[]",
                "3",
            ] {
                let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
                let Some(Message::RawResponse { result: raw, .. }) =
                    crate::jsonrpc::parse_raw_response(text.as_bytes())
                else {
                    panic!("{text}");
                };
                let Ok(Message::Response {
                    outcome: Ok(value), ..
                }) = Message::parse(text.as_bytes())
                else {
                    panic!("{text}");
                };
                let decorated = decorate_reply(method, Reply::Raw(raw)).unwrap();
                assert_eq!(
                    decorated.into_value().unwrap(),
                    decorate_result(method, value),
                    "{method} {result}"
                );
            }
        }
    }

    #[test]
    fn discover_keeps_the_legacy_capabilities_but_tasks() {
        let legacy = json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "logging": {},
            "completions": {},
            "tasks": {"list": {}},
            "experimental": {"x": {}},
        });
        assert_eq!(
            front_capabilities(Some(&legacy)),
            json!({
                "tools": {"listChanged": true},
                "prompts": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true},
                "logging": {},
                "completions": {},
                "experimental": {"x": {}},
            })
        );
        assert_eq!(front_capabilities(None), json!({}));
    }

    #[test]
    fn forbidden_legacy_codes_are_translated() {
        assert_eq!(
            translate_error(ErrorObject::new(-32002, "no such resource")).code,
            codes::INVALID_PARAMS
        );
        let url = translate_error(ErrorObject::new(-32042, "url required"));
        assert_eq!(url.code, codes::INTERNAL_ERROR);
        assert_eq!(translate_error(ErrorObject::new(-32000, "x")).code, -32000);
    }

    #[test]
    fn input_requests_drop_legacy_fields() {
        let profile = CapabilityProfile::default();
        let url = input_request(
            "elicitation/create",
            &json!({"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e1", "_meta": {"progressToken": 1}}),
            &profile,
        );
        assert_eq!(
            url,
            json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x"}})
        );
        let sampling = input_request(
            "sampling/createMessage",
            // mcp-lint: allow(deprecated-include-context) the legacy value the proxy must rewrite
            &json!({"messages": [], "maxTokens": 5, "includeContext": "thisServer"}),
            &profile,
        );
        assert_eq!(sampling["params"]["includeContext"], "none");
        assert_eq!(
            input_request("roots/list", &json!({}), &profile),
            // mcp-lint: allow(deprecated-roots) the proxy translates legacy roots requests
            json!({"method": "roots/list"})
        );
    }

    #[test]
    fn answers_are_checked_per_kind() {
        let form = json!({"message": "m", "requestedSchema": {}});
        assert_eq!(
            legacy_response(
                "elicitation/create",
                &form,
                &json!({"action": "accept", "content": {"name": "A"}})
            ),
            Some(json!({"action": "accept", "content": {"name": "A"}}))
        );
        assert_eq!(
            legacy_response("elicitation/create", &form, &json!(12345)),
            None
        );
        assert_eq!(
            legacy_response("elicitation/create", &form, &Value::Null),
            None
        );
        assert_eq!(
            legacy_response("elicitation/create", &form, &json!({"action": "accept"})),
            None
        );
        assert_eq!(
            legacy_response("elicitation/create", &form, &json!({"action": "decline"})),
            Some(json!({"action": "decline"}))
        );
        let url = json!({"mode": "url", "message": "m", "url": "https://x"});
        assert_eq!(
            legacy_response("elicitation/create", &url, &json!({"action": "accept"})),
            Some(json!({"action": "accept"}))
        );
        assert!(legacy_response("roots/list", &json!({}), &json!({"roots": []})).is_some());
        assert!(legacy_response("roots/list", &json!({}), &json!({"roots": 3})).is_none());
        assert!(legacy_response(
            "sampling/createMessage",
            &json!({}),
            &json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"})
        )
        .is_some());
    }

    #[test]
    fn legacy_params_lose_mrtr_fields_and_modern_meta() {
        let params = json!({
            "name": "ask_name",
            "arguments": {},
            "inputResponses": {"a": 1},
            // mcp-lint: allow(unsigned-request-state) a client retry's echo, stripped before forwarding
            "requestState": "s",
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "progressToken": "client-token",
                "traceparent": "00-x"
            }
        });
        assert_eq!(
            crate::params::legacy_tree(&params, Some("mrtr-1")),
            json!({"name": "ask_name", "arguments": {}, "_meta": {"progressToken": "mrtr-1", "traceparent": "00-x"}})
        );
    }
}
