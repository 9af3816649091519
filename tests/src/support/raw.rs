//! Hand-built 2026-07-28 requests over HTTP, for tests that must see (or break) the wire.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::modern::default_capabilities;

/// The protocol version the front speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// How long one raw request may take before the test fails.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A request before it is sent: tests may change any part of it (headers, body) first.
#[derive(Debug, Clone)]
pub struct RawRequest {
    /// Header name and value pairs, sent in order. [`RawClient::request`] fills
    /// `Content-Type`, `Accept`, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (for
    /// `tools/call`, `prompts/get`, `resources/read`) and `Authorization` (if the client has one).
    pub headers: Vec<(String, String)>,
    /// The JSON-RPC request.
    pub body: Value,
}

impl RawRequest {
    /// Sets (or replaces) a header.
    pub fn set_header(&mut self, name: &str, value: &str) -> &mut Self {
        self.remove_header(name);
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Removes a header (case-insensitively).
    pub fn remove_header(&mut self, name: &str) -> &mut Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn id(&self) -> &Value {
        &self.body["id"]
    }
}

/// What came back for one request.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    /// The `Content-Type` without parameters (`application/json`, `text/event-stream`, ...).
    pub content_type: String,
    /// The final JSON-RPC message: the JSON body, or the last SSE `data:` event. `Null` for an
    /// empty body (e.g. 202).
    pub message: Value,
    /// SSE events before the last one (request-scoped notifications). Empty for JSON.
    pub notifications: Vec<Value>,
    /// The body as received.
    pub body: String,
    /// The `Retry-After` header, if any.
    pub retry_after: Option<String>,
    /// The `WWW-Authenticate` header, if any.
    pub www_authenticate: Option<String>,
}

impl RawResponse {
    /// The response of `status` with `headers` and the whole `body` (JSON or SSE).
    pub fn from_parts(status: u16, headers: &http::HeaderMap, body: String) -> RawResponse {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header("content-type")
            .unwrap_or_default()
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let (message, notifications) = if content_type == "text/event-stream" {
            let mut events = parse_sse(&body);
            let last = events.pop().unwrap_or(Value::Null);
            (last, events)
        } else if body.trim().is_empty() {
            (Value::Null, Vec::new())
        } else {
            let message = serde_json::from_str(&body).unwrap_or_else(|e| {
                panic!("response {status} ({content_type}) is not JSON ({e}): {body}")
            });
            (message, Vec::new())
        };
        RawResponse {
            status,
            content_type,
            message,
            notifications,
            retry_after: header("retry-after"),
            www_authenticate: header("www-authenticate"),
            body,
        }
    }

    pub fn is_sse(&self) -> bool {
        self.content_type == "text/event-stream"
    }

    /// The `result` object, panicking (with the whole response) if this is not a result.
    pub fn result(&self) -> &Value {
        match self.message.get("result") {
            Some(result) => result,
            None => panic!("expected a JSON-RPC result, got {self:#?}"),
        }
    }

    /// The `error` object, panicking (with the whole response) if this is not an error.
    pub fn error(&self) -> &Value {
        match self.message.get("error") {
            Some(error) => error,
            None => panic!("expected a JSON-RPC error, got {self:#?}"),
        }
    }

    /// `error.code`, if this is an error response.
    pub fn error_code(&self) -> Option<i64> {
        self.message.get("error")?.get("code")?.as_i64()
    }

    /// `result.resultType`, if this is a result.
    pub fn result_type(&self) -> Option<&str> {
        self.message.get("result")?.get("resultType")?.as_str()
    }

    /// The text blocks of a tool result, joined with newlines.
    pub fn text(&self) -> String {
        self.result()["content"]
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

    /// `(inputRequests, requestState)` of an `input_required` result; panics otherwise.
    pub fn input_required(&self) -> (&Value, &str) {
        let result = self.result();
        assert_eq!(
            result["resultType"], "input_required",
            "expected an input_required result, got {self:#?}"
        );
        let state = result["requestState"]
            .as_str()
            .unwrap_or_else(|| panic!("input_required without a requestState: {self:#?}"));
        (&result["inputRequests"], state)
    }
}

/// A 2026-07-28 HTTP client without an SDK.
#[derive(Debug)]
pub struct RawClient {
    url: String,
    http: reqwest::Client,
    authorization: Option<String>,
    capabilities: Value,
    next_id: AtomicU64,
}

impl RawClient {
    /// A client for `url` (`http://HOST:PORT/mcp`) with no `Authorization` header and the
    /// default capabilities (both elicitation modes, sampling with context, roots).
    pub fn new(url: &str) -> RawClient {
        RawClient {
            url: url.to_string(),
            http: reqwest::Client::builder()
                .no_proxy()
                .timeout(REQUEST_TIMEOUT)
                .build()
                .expect("reqwest client"),
            authorization: None,
            capabilities: default_capabilities(),
            next_id: AtomicU64::new(1),
        }
    }

    /// Sends `authorization` (the whole header value, e.g. `Bearer alice`) on every request.
    pub fn with_authorization(mut self, authorization: &str) -> RawClient {
        self.authorization = Some(authorization.to_string());
        self
    }

    /// Declares these `clientCapabilities` in `_meta`.
    pub fn with_capabilities(mut self, capabilities: Value) -> RawClient {
        self.capabilities = capabilities;
        self
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends `request` and hangs up after `patience` (a client that gives up mid-call: the
    /// proxy sees the connection close). `Err` when it gave up; `Ok(body)` if the answer came first.
    pub async fn give_up_after(
        &self,
        request: &RawRequest,
        patience: std::time::Duration,
    ) -> Result<String, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(patience)
            .build()
            .expect("reqwest client");
        let mut builder = client.post(&self.url).json(&request.body);
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder.send().await?.text().await
    }

    /// Sends `request` (which carries a `progressToken`) and hangs up as soon as its first
    /// progress notification arrives: the legacy call is then running, however slow the
    /// machine (a fixed patience could hang up before the call reached the legacy server).
    /// `Err(body)` if the response ended before any progress.
    pub async fn hang_up_after_progress(&self, request: &RawRequest) -> Result<(), String> {
        let mut response = self.post(request).await;
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .unwrap_or_else(|e| panic!("reading the response from {} failed: {e}", self.url))
        {
            body.extend_from_slice(&chunk);
            if body
                .windows(b"notifications/progress".len())
                .any(|window| window == b"notifications/progress")
            {
                return Ok(());
            }
        }
        Err(String::from_utf8_lossy(&body).into_owned())
    }

    /// The required `_meta` of a request: protocol version, client capabilities, client info.
    pub fn meta(&self) -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities": self.capabilities,
            "io.modelcontextprotocol/clientInfo": { "name": "mcp-migrate-e2e-raw", "version": "0.1.0" },
        })
    }

    /// A well-formed request (fresh id, `_meta` merged into `params._meta`, all headers).
    pub fn request(&self, method: &str, params: Value) -> RawRequest {
        let mut params = match params {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => panic!("params must be an object, not {other}"),
        };
        let mut meta = self.meta();
        if let Some(Value::Object(extra)) = params.remove("_meta") {
            for (key, value) in extra {
                meta[key] = value;
            }
        }
        let name = ["name", "uri"]
            .iter()
            .find_map(|key| params.get(*key).and_then(Value::as_str))
            .map(str::to_string);
        params.insert("_meta".into(), meta);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut request = RawRequest {
            headers: Vec::new(),
            body: json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
        };
        request
            .set_header("Content-Type", "application/json")
            .set_header("Accept", "application/json, text/event-stream")
            .set_header("MCP-Protocol-Version", PROTOCOL_VERSION)
            .set_header("Mcp-Method", method);
        if matches!(method, "tools/call" | "prompts/get" | "resources/read") {
            if let Some(name) = name {
                request.set_header("Mcp-Name", &name);
            }
        }
        if let Some(authorization) = &self.authorization {
            request.set_header("Authorization", authorization);
        }
        request
    }

    /// POSTs `request` and reads the whole response.
    pub async fn send(&self, request: &RawRequest) -> RawResponse {
        let response = self.post(request).await;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response
            .text()
            .await
            .unwrap_or_else(|e| panic!("reading the response from {} failed: {e}", self.url));
        RawResponse::from_parts(status, &headers, body)
    }

    /// POSTs `request` (its headers in order, its body as JSON) and returns the response head.
    async fn post(&self, request: &RawRequest) -> reqwest::Response {
        let mut builder = self.http.post(&self.url);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        let body = serde_json::to_vec(&request.body).expect("serializable request");
        builder
            .body(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {} failed: {e}", self.url))
    }

    /// `method` with `params`, built by [`RawClient::request`] and sent.
    pub async fn call(&self, method: &str, params: Value) -> RawResponse {
        self.send(&self.request(method, params)).await
    }

    /// `tools/call` of `name` with `arguments` (an object, or `null` to leave them out).
    pub fn tool_request(&self, name: &str, arguments: Value) -> RawRequest {
        let mut params = json!({ "name": name });
        if !arguments.is_null() {
            params["arguments"] = arguments;
        }
        self.request("tools/call", params)
    }

    /// Sends a first-round `tools/call`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> RawResponse {
        self.send(&self.tool_request(name, arguments)).await
    }

    /// A retry of `tools/call`: new id, same name and arguments, plus `inputResponses` (unless
    /// `null`) and `requestState` (unless `None`).
    pub fn retry_request(
        &self,
        name: &str,
        arguments: Value,
        input_responses: Value,
        request_state: Option<&str>,
    ) -> RawRequest {
        let mut request = self.tool_request(name, arguments);
        if !input_responses.is_null() {
            request.body["params"]["inputResponses"] = input_responses;
        }
        if let Some(state) = request_state {
            request.body["params"]["requestState"] = json!(state);
        }
        request
    }

    /// Sends a retry built by [`RawClient::retry_request`].
    pub async fn retry_tool(
        &self,
        name: &str,
        arguments: Value,
        input_responses: Value,
        request_state: Option<&str>,
    ) -> RawResponse {
        self.send(&self.retry_request(name, arguments, input_responses, request_state))
            .await
    }

    /// Opens a `subscriptions/listen` stream with `notifications` as its filter, and reads
    /// nothing yet.
    pub async fn listen(&self, notifications: Value) -> ListenStream {
        self.open_stream(&self.request(
            "subscriptions/listen",
            json!({ "notifications": notifications }),
        ))
        .await
    }

    /// POSTs `request` and keeps its response open, to read it message by message.
    pub async fn open_stream(&self, request: &RawRequest) -> ListenStream {
        let response = self.post(request).await;
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        ListenStream {
            id: request.id().clone(),
            status: response.status().as_u16(),
            sse,
            response,
            buffer: String::new(),
            ready: std::collections::VecDeque::new(),
        }
    }
}

/// A response read message by message (`subscriptions/listen`).
#[derive(Debug)]
pub struct ListenStream {
    /// The id of the request (the stream's subscription id).
    pub id: Value,
    pub status: u16,
    /// `text/event-stream` (else a plain JSON response).
    pub sse: bool,
    response: reqwest::Response,
    buffer: String,
    ready: std::collections::VecDeque<Value>,
}

/// What [`ListenStream::next_within`] saw.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamItem {
    Message(Value),
    /// The response ended.
    End,
    /// Nothing arrived in time.
    Quiet,
}

impl ListenStream {
    /// The next JSON-RPC message (SSE event, or the JSON body), waiting at most `limit`.
    pub async fn next_within(&mut self, limit: Duration) -> StreamItem {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(message) = self.ready.pop_front() {
                return StreamItem::Message(message);
            }
            let chunk = match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Err(_) => return StreamItem::Quiet,
                Ok(Err(error)) => panic!("reading the stream failed: {error}"),
                Ok(Ok(None)) => {
                    let rest = std::mem::take(&mut self.buffer);
                    if self.sse {
                        self.ready.extend(parse_sse(&rest));
                    } else if !rest.trim().is_empty() {
                        self.ready.push_back(
                            serde_json::from_str(&rest).unwrap_or_else(|e| {
                                panic!("the response is not JSON ({e}): {rest}")
                            }),
                        );
                    }
                    return match self.ready.pop_front() {
                        Some(message) => StreamItem::Message(message),
                        None => StreamItem::End,
                    };
                }
                Ok(Ok(Some(chunk))) => chunk,
            };
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
            if !self.sse {
                continue;
            }
            // Complete events only (an event ends with a blank line).
            let normalized = self.buffer.replace("\r\n", "\n");
            if let Some(end) = normalized.rfind("\n\n") {
                self.ready.extend(parse_sse(&normalized[..end + 2]));
                self.buffer = normalized[end + 2..].to_string();
            }
        }
    }

    /// The next message, which must come within `limit`.
    pub async fn expect_message(&mut self, limit: Duration) -> Value {
        match self.next_within(limit).await {
            StreamItem::Message(message) => message,
            other => panic!("expected a message on the stream, got {other:?}"),
        }
    }
}

/// The JSON payloads of an SSE body, in order: one per event with `data:` lines (joined with
/// newlines), events without data (comments, priming events) skipped.
pub fn parse_sse(body: &str) -> Vec<Value> {
    let mut events = Vec::new();
    let mut data: Vec<&str> = Vec::new();
    let mut flush = |data: &mut Vec<&str>| {
        if !data.is_empty() {
            let payload = data.join("\n");
            let value = serde_json::from_str(&payload)
                .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {payload}"));
            events.push(value);
            data.clear();
        }
    };
    for line in body.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            flush(&mut data);
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value));
        }
        // `event:`, `id:`, `retry:` and `:` comments carry no message.
    }
    flush(&mut data);
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_split_on_blank_lines_and_comments_are_skipped() {
        let body = ": keep-alive\n\nevent: message\ndata: {\"a\":1}\n\nid: 7\ndata: {\"b\":\ndata: 2}\r\n\r\nretry: 10\n\ndata: {\"c\":3}";
        assert_eq!(
            parse_sse(body),
            vec![json!({"a": 1}), json!({"b": 2}), json!({"c": 3})]
        );
    }

    #[test]
    fn a_request_carries_meta_and_matching_headers() {
        let client = RawClient::new("http://127.0.0.1:1/mcp").with_authorization("Bearer x");
        let request = client.request(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}, "_meta": {"progressToken": "t"}}),
        );
        assert_eq!(request.header("mcp-method"), Some("tools/call"));
        assert_eq!(request.header("Mcp-Name"), Some("echo"));
        assert_eq!(
            request.header("MCP-Protocol-Version"),
            Some(PROTOCOL_VERSION)
        );
        assert_eq!(request.header("authorization"), Some("Bearer x"));
        let meta = &request.body["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            PROTOCOL_VERSION
        );
        assert_eq!(meta["progressToken"], "t");
        assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
        let other = client.request("tools/list", Value::Null);
        assert_ne!(request.id(), other.id(), "every request gets a new id");
        assert_eq!(other.header("Mcp-Name"), None);
    }
}
