//! The fixed part of the server: the tool, prompt and resource listings, and the answers that
//! need nothing from the client. Names and outputs are the ones the conformance suite's server
//! scenarios ask for (`src/scenarios/server/*.ts` of `@modelcontextprotocol/conformance`, and
//! its reference `examples/servers/typescript/everything-server.ts`).
//!
//! Everything is written as JSON, exactly as it goes on the wire, and read into rmcp 2.2's
//! types with [`from_json`].

use legacy_rmcp::{model::JsonObject, ErrorData as McpError};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// A 1x1 red PNG.
pub const TEST_IMAGE_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file.
pub const TEST_AUDIO_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// Reads a wire-format JSON value into an rmcp type (a bug in this file if it does not fit).
pub fn from_json<T: DeserializeOwned>(value: Value) -> T {
    match serde_json::from_value(value.clone()) {
        Ok(typed) => typed,
        Err(e) => panic!("fixture JSON does not fit rmcp 2.2's types ({e}): {value}"),
    }
}

/// An input schema without properties, for tools that take no arguments.
fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

/// `tools/list`: name, description and input schema of every tool.
pub fn tools() -> Vec<Value> {
    let plain = |name: &str, description: &str| json!({"name": name, "description": description, "inputSchema": no_arguments()});
    vec![
        // tools-call-* scenarios: fixed content, no client input.
        plain("test_simple_text", "Tests simple text content response"),
        plain("test_image_content", "Tests image content response"),
        plain("test_audio_content", "Tests audio content response"),
        plain(
            "test_embedded_resource",
            "Tests embedded resource content response",
        ),
        plain(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
        ),
        plain("test_error_handling", "Tests error response handling"),
        // server-sse-polling (2025-11-25, not scored): rmcp 2.2 cannot close a POST stream
        // mid-call, so the result simply arrives on the call's own stream.
        plain(
            "test_reconnection",
            "Tests SSE stream disconnection and client reconnection (SEP-1699)",
        ),
        plain(
            "test_tool_with_logging",
            "Tests tool that emits log messages during execution",
        ),
        plain(
            "test_tool_with_progress",
            "Tests tool that reports progress notifications",
        ),
        // bench/sdk_backends.sh: the same echo on every SDK's server.
        json!({
            "name": "echo",
            "description": "Returns the text unchanged",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        }),
        // The one plain tool of the (not scored) tasks-* scenarios: a synchronous call.
        json!({
            "name": "greet",
            "description": "Greets someone by name",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        }),
        // http-custom-header-server-validation (SEP-2243): a string parameter 2026-07-28 clients
        // mirror into `Mcp-Param-Region`; the proxy checks the header against the body.
        json!({
            "name": "test_header_param",
            "description": "Echoes the region, which clients mirror into Mcp-Param-Region",
            "inputSchema": {
                "type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
                "required": ["region"],
            },
        }),
        // json-schema-2020-12: the raw schema must survive tools/list unchanged.
        json!({
            "name": "json_schema_2020_12_tool",
            "description": "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
            "inputSchema": json_schema_2020_12(),
        }),
        // 2025-11-25 scenarios that push requests to the client.
        json!({
            "name": "test_sampling",
            "description": "Tests server-initiated sampling (LLM completion request)",
            "inputSchema": {
                "type": "object",
                "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
                "required": ["prompt"],
            },
        }),
        json!({
            "name": "test_elicitation",
            "description": "Tests server-initiated elicitation (user input request)",
            "inputSchema": {
                "type": "object",
                "properties": {"message": {"type": "string", "description": "The message to show the user"}},
                "required": ["message"],
            },
        }),
        plain(
            "test_elicitation_sep1034_defaults",
            "Tests elicitation with default values per SEP-1034",
        ),
        plain(
            "test_elicitation_sep1330_enums",
            "Tests elicitation with enum schema improvements per SEP-1330",
        ),
        // 2026-07-28 MRTR scenarios: legacy pushes the proxy turns into input_required rounds.
        plain(
            "test_input_required_result_elicitation",
            "Asks for the user's name (elicitation) and greets them",
        ),
        plain(
            "test_input_required_result_sampling",
            "Asks the client's LLM for the capital of France (sampling)",
        ),
        plain(
            "test_input_required_result_list_roots",
            "Counts the client's roots (roots/list)",
        ),
        plain(
            "test_input_required_result_request_state",
            "Asks for a confirmation; the paused call is the state",
        ),
        plain(
            "test_input_required_result_multiple_inputs",
            "Elicitation, sampling and roots/list at the same time",
        ),
        plain(
            "test_input_required_result_multi_round",
            "Asks for a name, then for a favourite colour",
        ),
        plain(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation (the state must be integrity-protected)",
        ),
        plain(
            "test_input_required_result_capabilities",
            "Asks only for what the client declared (elicitation and/or sampling)",
        ),
        // server-stateless diagnostics.
        plain(
            "test_missing_capability",
            "Needs the client's LLM (sampling)",
        ),
        plain(
            "test_streaming_elicitation",
            "Asks the user something mid-call (elicitation)",
        ),
        plain("test_logging_tool", "Logs a message mid-call"),
        // The proxy's end-to-end flows (tests/tests/proxy_sdk_flows.rs).
        plain(
            "test_url_elicitation",
            "Sends the user to a URL (URL-mode elicitation) mid-call",
        ),
        plain("test_cancellable", "Runs for 5 s unless cancelled"),
        plain(
            "test_trigger_tool_change",
            "Announces a tool list change (notifications/tools/list_changed)",
        ),
        plain(
            "test_trigger_prompt_change",
            "Announces a prompt list change (notifications/prompts/list_changed)",
        ),
    ]
}

/// The input schema of `json_schema_2020_12_tool` (SEP-1613 / SEP-2106 keywords).
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            },
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false,
    })
}

/// The result of a tool that needs nothing from the client; `None` for other names.
pub fn static_tool_result(name: &str, arguments: &JsonObject) -> Option<Value> {
    let content = match name {
        "test_simple_text" => json!([
            {"type": "text", "text": "This is a simple text response for testing."}
        ]),
        "test_image_content" => json!([
            {"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"}
        ]),
        "test_audio_content" => json!([
            {"type": "audio", "data": TEST_AUDIO_BASE64, "mimeType": "audio/wav"}
        ]),
        "test_embedded_resource" => json!([{
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            },
        }]),
        "test_multiple_content_types" => json!([
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"},
            {
                "type": "resource",
                "resource": {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": json!({"test": "data", "value": 123}).to_string(),
                },
            },
        ]),
        "test_reconnection" => json!([{
            "type": "text",
            "text": "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
        }]),
        "test_error_handling" => {
            // A tool failure is a result with `isError`, not a JSON-RPC error.
            return Some(json!({
                "isError": true,
                "content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}],
            }));
        }
        "greet" => {
            let name = arguments
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("World");
            json!([{"type": "text", "text": format!("Hello, {name}!")}])
        }
        "echo" => {
            let text = arguments
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            json!([{"type": "text", "text": text}])
        }
        "test_header_param" => {
            let region = arguments
                .get("region")
                .and_then(Value::as_str)
                .unwrap_or_default();
            json!([{"type": "text", "text": format!("region: {region}")}])
        }
        "json_schema_2020_12_tool" => json!([{
            "type": "text",
            "text": format!("JSON Schema 2020-12 tool called with: {}", Value::Object(arguments.clone())),
        }]),
        _ => return None,
    };
    Some(json!({ "content": content }))
}

/// `prompts/list`.
pub fn prompts() -> Vec<Value> {
    vec![
        json!({
            "name": "test_simple_prompt",
            "title": "Simple Test Prompt",
            "description": "A simple prompt without arguments",
        }),
        json!({
            "name": "test_prompt_with_arguments",
            "title": "Prompt With Arguments",
            "description": "A prompt with required arguments",
            "arguments": [
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "description": "Second test argument", "required": true},
            ],
        }),
        json!({
            "name": "test_prompt_with_embedded_resource",
            "title": "Prompt With Embedded Resource",
            "description": "A prompt that includes an embedded resource",
            "arguments": [
                {"name": "resourceUri", "description": "URI of the resource to embed", "required": true},
            ],
        }),
        json!({
            "name": "test_prompt_with_image",
            "title": "Prompt With Image",
            "description": "A prompt that includes image content",
        }),
        json!({
            "name": "test_input_required_result_prompt",
            "title": "Prompt With Context",
            "description": "Asks the user for context (elicitation) before building the prompt",
        }),
    ]
}

/// The result of a prompt that needs nothing from the client; `None` for other names.
pub fn static_prompt(name: &str, arguments: &JsonObject) -> Result<Option<Value>, McpError> {
    let argument = |key: &str| -> Result<String, McpError> {
        arguments
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| McpError::invalid_params(format!("missing argument `{key}`"), None))
    };
    let messages = match name {
        "test_simple_prompt" => json!([
            {"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}
        ]),
        "test_prompt_with_arguments" => {
            let (arg1, arg2) = (argument("arg1")?, argument("arg2")?);
            json!([{
                "role": "user",
                "content": {"type": "text", "text": format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")},
            }])
        }
        "test_prompt_with_embedded_resource" => {
            let uri = argument("resourceUri")?;
            json!([
                {
                    "role": "user",
                    "content": {
                        "type": "resource",
                        "resource": {"uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing."},
                    },
                },
                {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}},
            ])
        }
        "test_prompt_with_image" => json!([
            {"role": "user", "content": {"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"}},
            {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}},
        ]),
        _ => return Ok(None),
    };
    Ok(Some(json!({ "messages": messages })))
}

/// `resources/list`.
pub fn resources() -> Vec<Value> {
    vec![
        json!({
            "uri": "test://static-text",
            "name": "static-text",
            "title": "Static Text Resource",
            "description": "A static text resource for testing",
            "mimeType": "text/plain",
        }),
        json!({
            "uri": "test://static-binary",
            "name": "static-binary",
            "title": "Static Binary Resource",
            "description": "A static binary resource (image) for testing",
            "mimeType": "image/png",
        }),
        json!({
            "uri": "test://watched-resource",
            "name": "watched-resource",
            "title": "Watched Resource",
            "description": "A resource clients may subscribe to",
            "mimeType": "text/plain",
        }),
    ]
}

/// `resources/templates/list`.
pub fn resource_templates() -> Vec<Value> {
    vec![json!({
        "uriTemplate": "test://template/{id}/data",
        "name": "template",
        "title": "Resource Template",
        "description": "A resource template with parameter substitution",
        "mimeType": "application/json",
    })]
}

/// The contents of a resource; `None` when there is no such resource.
pub fn read_resource(uri: &str) -> Option<Value> {
    let contents = match uri {
        "test://static-text" => json!({
            "uri": uri,
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }),
        "test://static-binary" => json!({
            "uri": uri,
            "mimeType": "image/png",
            "blob": TEST_IMAGE_BASE64,
        }),
        "test://watched-resource" => json!({
            "uri": uri,
            "mimeType": "text/plain",
            "text": "Watched resource content",
        }),
        _ => {
            let id = uri
                .strip_prefix("test://template/")?
                .strip_suffix("/data")
                .filter(|id| !id.is_empty() && !id.contains('/'))?;
            json!({
                "uri": uri,
                "mimeType": "application/json",
                "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string(),
            })
        }
    };
    Some(json!({ "contents": [contents] }))
}

#[cfg(test)]
mod tests {
    use legacy_rmcp::model::{
        CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate,
        Tool,
    };

    use super::*;

    #[test]
    fn every_fixture_fits_rmcp_types() {
        for tool in tools() {
            let _: Tool = from_json(tool);
        }
        for prompt in prompts() {
            let _: Prompt = from_json(prompt);
        }
        for resource in resources() {
            let _: Resource = from_json(resource);
        }
        for template in resource_templates() {
            let _: ResourceTemplate = from_json(template);
        }
        let args: JsonObject =
            from_json(json!({"arg1": "a", "arg2": "b", "resourceUri": "test://x"}));
        for tool in tools() {
            let name = tool["name"].as_str().unwrap();
            if let Some(result) = static_tool_result(name, &args) {
                let _: CallToolResult = from_json(result);
            }
        }
        for prompt in prompts() {
            let name = prompt["name"].as_str().unwrap();
            if let Some(result) = static_prompt(name, &args).unwrap() {
                let _: GetPromptResult = from_json(result);
            }
        }
        for uri in [
            "test://static-text",
            "test://static-binary",
            "test://watched-resource",
            "test://template/123/data",
        ] {
            let _: ReadResourceResult = from_json(read_resource(uri).unwrap());
        }
    }

    #[test]
    fn template_reads_substitute_the_id_and_nothing_else_matches() {
        let read = read_resource("test://template/123/data").unwrap();
        assert!(read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Data for ID: 123"));
        assert!(read_resource("test://template//data").is_none());
        assert!(read_resource("test://nonexistent").is_none());
    }
}
