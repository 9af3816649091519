//! Self-tests of the proxy end-to-end harness that need no proxy: the scripted rmcp 3.11 client
//! against the legacy fixture server directly (legacy `initialize`, push-style requests), and
//! the schema checks. They pin the texts the proxy tests expect: whatever the legacy server
//! answers a scripted client directly, it must answer through the proxy too.

use std::time::Duration;

use mcp_migrate_tests::support::{
    binaries_async, tool_text, within, LegacyHttpServer, ModernClient, RawClient, Script,
    SpecSchema,
};
use rmcp::model::ProtocolVersion;
use rmcp::service::ClientLifecycleMode;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(120);

/// A scripted client that reaches the legacy server with the legacy handshake (rmcp's `Auto`
/// mode: `server/discover` fails, then `initialize` with 2025-11-25).
async fn legacy_client(server: &LegacyHttpServer, script: Script) -> ModernClient {
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    ModernClient::try_connect(server.url(), script, None, lifecycle)
        .await
        .unwrap_or_else(|e| panic!("no legacy connection to the fixture server: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_client_gets_the_expected_texts_from_the_legacy_server_directly() {
    binaries_async().await;
    within(LIMIT, "direct legacy calls", async {
        let server = LegacyHttpServer::start().await;
        let script = Script::default();
        let client = legacy_client(&server, script.clone()).await;

        let cases = [
            ("ask_name", json!({}), "Hello, Alice!".to_string()),
            ("ask_twice", json!({}), "Alice likes blue".to_string()),
            (
                "ask_three",
                json!({}),
                format!(
                    "name: Alice\nsample: {}\nroots: {}",
                    script.sampling_text,
                    script.root_uris(", ")
                ),
            ),
            (
                "summarize",
                json!({"text": "a long text"}),
                script.sampling_text.clone(),
            ),
            ("list_workspace_roots", json!({}), script.root_uris("\n")),
            (
                "confirm_delete",
                json!({"path": "/tmp/x"}),
                "Deletion of /tmp/x confirmed.".to_string(),
            ),
            ("echo", json!({"text": "hi"}), "hi".to_string()),
        ];
        for (tool, arguments, expected) in cases {
            let result = client
                .call_tool(tool, arguments)
                .await
                .unwrap_or_else(|e| panic!("{tool}: {e}"));
            assert_eq!(tool_text(&result), expected, "{tool}");
            assert_ne!(result.is_error, Some(true), "{tool}");
        }
        let url = client
            .call_tool("connect_account", json!({}))
            .await
            .unwrap();
        let text = tool_text(&url);
        assert!(
            text.starts_with("URL elicitation connect-account-") && text.ends_with(": Accept"),
            "{text}"
        );

        // The handler saw the push-style requests (numeric ids, so no MRTR key).
        let seen = client.seen();
        let methods: Vec<&str> = seen.iter().map(|s| s.method.as_str()).collect();
        assert_eq!(
            methods
                .iter()
                .filter(|m| **m == "elicitation/create")
                .count(),
            1 + 2 + 1 + 1 + 1,
            "{methods:?}"
        );
        assert!(seen.iter().all(|s| s.key.is_none()));
        client.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declining_and_cancelling_give_the_legacy_texts_directly() {
    binaries_async().await;
    within(LIMIT, "decline and cancel", async {
        let server = LegacyHttpServer::start().await;
        for (action, text) in [
            (
                mcp_migrate_tests::support::FormAction::Decline,
                "No name given: the user declined.",
            ),
            (
                mcp_migrate_tests::support::FormAction::Cancel,
                "No name given: the user cancelled.",
            ),
        ] {
            let client = legacy_client(&server, Script::default().with_form_action(action)).await;
            let result = client.call_tool("ask_name", json!({})).await.unwrap();
            assert_eq!(tool_text(&result), text);
            client.close().await;
        }
    })
    .await;
}

#[test]
fn the_schema_checks_are_not_vacuous() {
    let schema = SpecSchema::load();
    let complete = json!({"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "complete", "content": [{"type": "text", "text": "hi"}]}});
    schema.assert_valid("CallToolResultResponse", &complete);
    schema.assert_valid("CallToolResult", &complete["result"]);
    let mut no_jsonrpc = complete.clone();
    no_jsonrpc.as_object_mut().unwrap().remove("jsonrpc");
    assert!(!schema
        .errors("CallToolResultResponse", &no_jsonrpc)
        .is_empty());
    let bad_content = json!({"resultType": "complete", "content": [{"type": "text"}]});
    assert!(!schema.errors("CallToolResult", &bad_content).is_empty());

    let input_required = json!({
        "resultType": "input_required",
        "inputRequests": {"k": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "What is your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}},
        // mcp-lint: allow(unsigned-request-state) a literal for a schema check, not a server's state
        "requestState": "opaque",
    });
    schema.assert_valid("InputRequiredResult", &input_required);
    schema.assert_valid("ElicitRequest", &input_required["inputRequests"]["k"]);
    assert!(!schema
        .errors("ElicitRequest", &json!({"method": "elicitation/create"}))
        .is_empty());

    let discover = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
        "capabilities": {}, "ttlMs": 0, "cacheScope": "private"});
    schema.assert_valid("DiscoverResult", &discover);
    let mut no_ttl = discover.clone();
    no_ttl.as_object_mut().unwrap().remove("ttlMs");
    assert!(!schema.errors("DiscoverResult", &no_ttl).is_empty());
    schema.assert_valid(
        "JSONRPCErrorResponse",
        &json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad state"}}),
    );
    assert!(!schema
        .errors(
            "JSONRPCErrorResponse",
            &json!({"jsonrpc": "2.0", "id": 3, "error": {"code": "x"}})
        )
        .is_empty());
}

#[test]
fn raw_requests_and_scripted_answers_are_valid_2026_messages() {
    let schema = SpecSchema::load();
    let client = RawClient::new("http://127.0.0.1:1/mcp");
    schema.assert_valid(
        "DiscoverRequest",
        &client.request("server/discover", Value::Null).body,
    );
    schema.assert_valid(
        "ListToolsRequest",
        &client.request("tools/list", Value::Null).body,
    );
    schema.assert_valid(
        "CallToolRequest",
        &client.tool_request("echo", json!({"text": "hi"})).body,
    );

    let script = Script::default();
    let elicitation = json!({"mode": "form", "message": "m", "requestedSchema": {
        "type": "object", "properties": {"name": {"type": "string"}, "color": {"type": "string"}}}});
    let answers = json!({
        "e": script.answer("elicitation/create", &elicitation).unwrap(),
        "s": script.answer("sampling/createMessage", &Value::Null).unwrap(),
        "r": script.answer("roots/list", &Value::Null).unwrap(),
    });
    assert_eq!(
        answers["e"],
        json!({"action": "accept", "content": {"name": "Alice", "color": "blue"}})
    );
    schema.assert_valid("ElicitResult", &answers["e"]);
    schema.assert_valid("CreateMessageResult", &answers["s"]);
    schema.assert_valid("ListRootsResult", &answers["r"]);
    let retry = client.retry_request("ask_three", Value::Null, answers, Some("state"));
    schema.assert_valid("CallToolRequest", &retry.body);
    assert_eq!(retry.body["params"]["requestState"], "state");
}

/// A tiny MRTR server on rmcp 3.11 (2026-07-28, no proxy): an independent modern peer for the
/// harness's two clients. Its `greet` tool asks for a name with an `input_required` result under
/// the key `who` and greets once the retry carries the answer.
mod modern_peer {
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::tool::InputResponses;
    use rmcp::model::{
        CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams,
        ElicitationSchema, InputRequest, InputRequests, InputRequiredResult, ServerCapabilities,
        ServerConfig,
    };
    use rmcp::transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    };
    use rmcp::{tool, tool_handler, tool_router, ErrorData as McpError, ServerHandler};

    #[derive(Clone)]
    pub struct Greeter {
        tool_router: ToolRouter<Self>,
    }

    #[tool_router]
    impl Greeter {
        fn new() -> Self {
            Self {
                tool_router: Self::tool_router(),
            }
        }

        #[tool(description = "Greet the user, asking for their name first")]
        async fn greet(
            &self,
            InputResponses(responses): InputResponses,
        ) -> Result<CallToolResponse, McpError> {
            let name = responses
                .as_ref()
                .and_then(|responses| responses.get("who"))
                .and_then(|answer| answer.pointer("/content/name"))
                .and_then(|name| name.as_str())
                .map(str::to_owned);
            if let Some(name) = name {
                let text = format!("Hello, {name}!");
                return Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
            }
            let schema = ElicitationSchema::builder()
                .required_string("name")
                .build()
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            let mut requests = InputRequests::new();
            requests.insert(
                "who".to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(
                    ElicitRequestParams::FormElicitationParams {
                        meta: None,
                        message: "What is your name?".to_owned(),
                        requested_schema: schema,
                    },
                )),
            );
            Ok(CallToolResponse::InputRequired(
                InputRequiredResult::from_input_requests(requests),
            ))
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for Greeter {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
    }

    /// Serves the greeter on a free port until the test ends; returns `http://ADDR/mcp`.
    pub async fn start() -> String {
        let service = StreamableHttpService::new(
            || Ok(Greeter::new()),
            LocalSessionManager::default().into(),
            StreamableHttpServerConfig::default(),
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        format!("http://{addr}/mcp")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rmcp_client_drives_mrtr_against_a_2026_server() {
    within(LIMIT, "rmcp client against rmcp server", async {
        let url = modern_peer::start().await;
        let client = ModernClient::connect(&url, Script::default(), Some("token")).await;

        let first = client
            .call_tool_once(mcp_migrate_tests::support::tool_params("greet", json!({})))
            .await
            .unwrap();
        let rmcp::model::CallToolResponse::InputRequired(first) = first else {
            panic!("expected input_required, got {first:?}");
        };
        let keys: Vec<&String> = first.input_requests.as_ref().unwrap().keys().collect();
        assert_eq!(keys, ["who"]);
        assert!(client.seen().is_empty(), "call_tool_once does not answer");

        let result = client.call_tool("greet", json!({})).await.unwrap();
        assert_eq!(tool_text(&result), "Hello, Alice!");
        let seen = client.seen();
        assert_eq!(seen.len(), 1, "{seen:#?}");
        assert_eq!(
            seen[0].key.as_deref(),
            Some("who"),
            "the handler sees the MRTR key"
        );
        assert_eq!(seen[0].method, "elicitation/create");
        assert_eq!(seen[0].params["message"], "What is your name?");
        client.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_raw_client_is_accepted_by_a_2026_server() {
    within(LIMIT, "raw client against rmcp server", async {
        let schema = SpecSchema::load();
        let url = modern_peer::start().await;
        let raw = RawClient::new(&url).with_authorization("Bearer token");

        let request = raw.request("server/discover", Value::Null);
        let response = raw.send(&request).await;
        assert_eq!(response.status, 200, "{response:#?}");
        schema.assert_valid("DiscoverResultResponse", &response.message);

        let response = raw.call("tools/list", Value::Null).await;
        assert_eq!(response.status, 200, "{response:#?}");
        schema.assert_valid("ListToolsResultResponse", &response.message);

        let request = raw.tool_request("greet", json!({}));
        let response = raw.send(&request).await;
        assert_eq!(response.status, 200, "{response:#?}");
        assert_eq!(&response.message["id"], request.id());
        schema.assert_valid("CallToolResultResponse", &response.message);
        schema.assert_valid("InputRequiredResult", response.result());
        let requests = response.result()["inputRequests"].clone();
        let answers = Script::default().answer_all(&requests).unwrap();
        let retry = raw.retry_tool("greet", json!({}), answers, None).await;
        assert_eq!(retry.text(), "Hello, Alice!", "{retry:#?}");
        schema.assert_valid("CallToolResultResponse", &retry.message);

        // A broken header is refused by a strict peer: the raw client can break requests.
        let mut request = raw.tool_request("greet", json!({}));
        request.set_header("Mcp-Name", "other");
        let response = raw.send(&request).await;
        assert_eq!(response.status, 400, "{response:#?}");
        assert_eq!(response.error_code(), Some(-32020), "{response:#?}");
    })
    .await;
}
