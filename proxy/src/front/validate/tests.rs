use base64::Engine as _;
use serde_json::{json, Value};

use super::*;

const V: &str = PROTOCOL_VERSION;

fn meta() -> Value {
    json!({
        meta_keys::PROTOCOL_VERSION: V,
        meta_keys::CLIENT_CAPABILITIES: {},
    })
}

fn params_for(method: &str) -> Value {
    let mut params = json!({ "_meta": meta() });
    match method {
        "tools/call" => params["name"] = json!("echo"),
        "prompts/get" => params["name"] = json!("greet"),
        "resources/read" => params["uri"] = json!("file:///a.txt"),
        _ => {}
    }
    params
}

fn request(method: &str, params: Option<Value>) -> Message {
    Message::Request {
        id: json!(7),
        method: method.into(),
        params,
    }
}

fn b64(text: &str) -> String {
    format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode(text)
    )
}

/// Headers a conforming client sends for `params`.
fn good_headers(method: &str, params: &Value) -> Vec<(&'static str, Vec<u8>)> {
    let mut headers = vec![
        ("MCP-Protocol-Version", V.as_bytes().to_vec()),
        ("Mcp-Method", method.as_bytes().to_vec()),
    ];
    if let Some(name) = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
    {
        headers.push(("Mcp-Name", name.as_bytes().to_vec()));
    }
    headers
}

fn header_map(pairs: &[(&str, Vec<u8>)]) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            http::HeaderValue::from_bytes(value).unwrap(),
        );
    }
    map
}

/// Replaces (or with `None`, removes) one header of a list.
fn with_header(
    mut headers: Vec<(&'static str, Vec<u8>)>,
    name: &'static str,
    value: Option<&[u8]>,
) -> Vec<(&'static str, Vec<u8>)> {
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    if let Some(value) = value {
        headers.push((name, value.to_vec()));
    }
    headers
}

fn run(
    message: &Message,
    headers: Option<&[(&'static str, Vec<u8>)]>,
) -> Result<Validated, Rejection> {
    let map = headers.map(header_map);
    validate(message, map.as_ref(), Principal::anonymous())
}

#[derive(Debug)]
enum Expect {
    Request,
    Error {
        code: i64,
        status: u16,
        /// A piece of the error message (names the key or header).
        contains: &'static str,
    },
}

struct Case {
    name: &'static str,
    message: Message,
    /// `None`: stdio.
    headers: Option<Vec<(&'static str, Vec<u8>)>>,
    expect: Expect,
}

fn http_case(name: &'static str, method: &str, params: Value, expect: Expect) -> Case {
    let headers = good_headers(method, &params);
    Case {
        name,
        message: request(method, Some(params)),
        headers: Some(headers),
        expect,
    }
}

fn err(code: i64, status: u16, contains: &'static str) -> Expect {
    Expect::Error {
        code,
        status,
        contains,
    }
}

fn cases() -> Vec<Case> {
    use codes::*;
    let mut cases = Vec::new();

    // Every 2026-07-28 request method passes, over HTTP and stdio.
    for method in CLIENT_REQUEST_METHODS {
        cases.push(http_case(
            "known method (http)",
            method,
            params_for(method),
            Expect::Request,
        ));
        cases.push(Case {
            name: "known method (stdio)",
            message: request(method, Some(params_for(method))),
            headers: None,
            expect: Expect::Request,
        });
    }

    // Rule 1: method.
    for method in [
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "tasks/get",
        "nope",
        "",
    ] {
        cases.push(http_case(
            "unknown method",
            method,
            params_for(method),
            err(METHOD_NOT_FOUND, 404, "method not found"),
        ));
    }
    cases.push(Case {
        name: "unknown method wins over missing headers and _meta",
        message: request("ping", None),
        headers: Some(vec![]),
        expect: err(METHOD_NOT_FOUND, 404, "`ping`"),
    });
    cases.push(Case {
        name: "legacy initialize",
        message: request(
            "initialize",
            Some(json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}})),
        ),
        headers: Some(vec![("MCP-Protocol-Version", b"2025-11-25".to_vec())]),
        expect: err(UNSUPPORTED_PROTOCOL_VERSION, 400, "2025-11-25"),
    });
    cases.push(http_case(
        "modern-shaped initialize (no protocolVersion)",
        "initialize",
        params_for("initialize"),
        err(METHOD_NOT_FOUND, 404, "supported versions: 2026-07-28"),
    ));

    // Rule 2: params and _meta.
    let pv = meta_keys::PROTOCOL_VERSION;
    let cc = meta_keys::CLIENT_CAPABILITIES;
    let bad_params: Vec<(&'static str, Option<Value>, &'static str)> = vec![
        ("no params", None, "missing `params`"),
        (
            "params array",
            Some(json!([1])),
            "`params` must be an object",
        ),
        ("no _meta", Some(json!({})), "missing `params._meta`"),
        (
            "_meta not object",
            Some(json!({"_meta": "x"})),
            "`params._meta` must be an object",
        ),
        (
            "no protocolVersion",
            Some(json!({"_meta": {cc: {}}})),
            "io.modelcontextprotocol/protocolVersion",
        ),
        (
            "protocolVersion not string",
            Some(json!({"_meta": {pv: 20260728, cc: {}}})),
            "must be a string",
        ),
        (
            "no clientCapabilities",
            Some(json!({"_meta": {pv: V}})),
            "io.modelcontextprotocol/clientCapabilities",
        ),
        (
            "clientCapabilities not object",
            Some(json!({"_meta": {pv: V, cc: []}})),
            "must be an object",
        ),
    ];
    for (name, params, contains) in bad_params {
        for headers in [None, Some(good_headers("tools/list", &json!({})))] {
            cases.push(Case {
                name,
                message: request("tools/list", params.clone()),
                headers,
                expect: err(INVALID_PARAMS, 400, contains),
            });
        }
    }

    // Rule 3: MCP-Protocol-Version header.
    let list = params_for("tools/list");
    let list_headers = good_headers("tools/list", &list);
    for (name, value, contains) in [
        (
            "version header missing",
            None,
            "missing `MCP-Protocol-Version`",
        ),
        (
            "version header differs",
            Some(&b"2025-11-25"[..]),
            "does not match `_meta` protocol version",
        ),
        (
            "version header not ascii",
            Some(&b"2026-07-28\xff"[..]),
            "invalid characters",
        ),
    ] {
        cases.push(Case {
            name,
            message: request("tools/list", Some(list.clone())),
            headers: Some(with_header(
                list_headers.clone(),
                "MCP-Protocol-Version",
                value,
            )),
            expect: err(HEADER_MISMATCH, 400, contains),
        });
    }
    let mut repeated = list_headers.clone();
    repeated.push(("mcp-protocol-version", V.as_bytes().to_vec()));
    cases.push(Case {
        name: "version header repeated",
        message: request("tools/list", Some(list.clone())),
        headers: Some(repeated),
        expect: err(HEADER_MISMATCH, 400, "repeated"),
    });
    let mut old = params_for("tools/list");
    old["_meta"][pv] = json!("v999.0.0");
    cases.push(Case {
        name: "body version unsupported, header = 2026-07-28: mismatch first",
        message: request("tools/list", Some(old.clone())),
        headers: Some(list_headers.clone()),
        expect: err(HEADER_MISMATCH, 400, "v999.0.0"),
    });

    // Rule 4: version.
    cases.push(Case {
        name: "unsupported version (header agrees)",
        message: request("tools/list", Some(old.clone())),
        headers: Some(with_header(
            list_headers.clone(),
            "MCP-Protocol-Version",
            Some(b"v999.0.0"),
        )),
        expect: err(UNSUPPORTED_PROTOCOL_VERSION, 400, "v999.0.0"),
    });
    cases.push(Case {
        name: "unsupported version (stdio)",
        message: request("tools/list", Some(old)),
        headers: None,
        expect: err(UNSUPPORTED_PROTOCOL_VERSION, 400, "v999.0.0"),
    });

    // Rule 5: Mcp-Method and Mcp-Name.
    for (name, value, contains) in [
        ("method header missing", None, "missing `Mcp-Method`"),
        (
            "method header differs",
            Some(&b"prompts/list"[..]),
            "does not match body method",
        ),
        (
            "method header value case differs",
            Some(&b"TOOLS/LIST"[..]),
            "does not match body method",
        ),
    ] {
        cases.push(Case {
            name,
            message: request("tools/list", Some(list.clone())),
            headers: Some(with_header(list_headers.clone(), "Mcp-Method", value)),
            expect: err(HEADER_MISMATCH, 400, contains),
        });
    }
    cases.push(Case {
        name: "header names are case-insensitive",
        message: request("tools/list", Some(list.clone())),
        headers: Some(vec![
            ("mcp-protocol-version", V.as_bytes().to_vec()),
            ("MCP-METHOD", b"tools/list".to_vec()),
        ]),
        expect: Expect::Request,
    });
    cases.push(Case {
        name: "whitespace around header values",
        message: request("tools/list", Some(list.clone())),
        headers: Some(with_header(
            list_headers.clone(),
            "Mcp-Method",
            Some(b"  tools/list\t"),
        )),
        expect: Expect::Request,
    });
    for method in ["tools/call", "prompts/get", "resources/read"] {
        let params = params_for(method);
        let headers = good_headers(method, &params);
        let body_name = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
            .unwrap();
        let name_cases: Vec<(&'static str, Option<Vec<u8>>, Expect)> = vec![
            (
                "name header missing",
                None,
                err(HEADER_MISMATCH, 400, "missing `Mcp-Name`"),
            ),
            (
                "name header differs",
                Some(b"other".to_vec()),
                err(HEADER_MISMATCH, 400, "does not match body"),
            ),
            (
                "name header padded",
                Some(format!("  {body_name}\t").into_bytes()),
                Expect::Request,
            ),
            (
                "name header base64 of the name",
                Some(b64(body_name).into_bytes()),
                Expect::Request,
            ),
            (
                "name header base64 of another name",
                Some(b64("other").into_bytes()),
                err(HEADER_MISMATCH, 400, "does not match body"),
            ),
            (
                "name header base64 without padding",
                Some(b"=?base64?ZWNobw?=".to_vec()),
                err(HEADER_MISMATCH, 400, "not valid base64"),
            ),
            (
                "name header base64 bad chars",
                Some(b"=?base64?ZW!!obw==?=".to_vec()),
                err(HEADER_MISMATCH, 400, "not valid base64"),
            ),
            (
                "name header base64 not utf-8",
                Some(b"=?base64?/w==?=".to_vec()),
                err(HEADER_MISMATCH, 400, "not UTF-8"),
            ),
            (
                "name header raw utf-8",
                Some("ünï".as_bytes().to_vec()),
                err(HEADER_MISMATCH, 400, "invalid characters"),
            ),
        ];
        for (name, value, expect) in name_cases {
            cases.push(Case {
                name,
                message: request(method, Some(params.clone())),
                headers: Some(with_header(headers.clone(), "Mcp-Name", value.as_deref())),
                expect,
            });
        }
    }
    // Unicode names travel base64-encoded.
    for (method, key, value) in [
        ("tools/call", "name", "天気/予報 ☀"),
        ("prompts/get", "name", " padded "),
        ("resources/read", "uri", "file:///tmp/résumé 2.txt"),
        ("tools/call", "name", "=?base64?literal?="),
    ] {
        let mut params = params_for(method);
        params[key] = json!(value);
        cases.push(Case {
            name: "unicode name via base64",
            message: request(method, Some(params)),
            headers: Some(vec![
                ("MCP-Protocol-Version", V.as_bytes().to_vec()),
                ("Mcp-Method", method.as_bytes().to_vec()),
                ("Mcp-Name", b64(value).into_bytes()),
            ]),
            expect: Expect::Request,
        });
    }
    cases.push(Case {
        name: "literal sentinel-looking value without suffix compares literally",
        message: request(
            "tools/call",
            Some(json!({"_meta": meta(), "name": "=?base64?ZWNobw=="})),
        ),
        headers: Some(vec![
            ("MCP-Protocol-Version", V.as_bytes().to_vec()),
            ("Mcp-Method", b"tools/call".to_vec()),
            ("Mcp-Name", b"=?base64?ZWNobw==".to_vec()),
        ]),
        expect: Expect::Request,
    });
    cases.push(Case {
        name: "Mcp-Name on a method without a name is ignored",
        message: request("tools/list", Some(list.clone())),
        headers: Some(with_header(
            list_headers.clone(),
            "Mcp-Name",
            Some(b"whatever"),
        )),
        expect: Expect::Request,
    });

    // Rule 6: logLevel, progressToken, name/uri.
    for level in LOG_LEVELS {
        let mut params = params_for("tools/list");
        params["_meta"][meta_keys::LOG_LEVEL] = json!(level);
        cases.push(http_case(
            "valid log level",
            "tools/list",
            params,
            Expect::Request,
        ));
    }
    for level in [json!("verbose"), json!("INFO"), json!(3), json!(null)] {
        let mut params = params_for("tools/list");
        params["_meta"][meta_keys::LOG_LEVEL] = level;
        cases.push(http_case(
            "invalid log level",
            "tools/list",
            params,
            err(INVALID_PARAMS, 400, "logLevel"),
        ));
    }
    for token in [json!("t-1"), json!(5), json!(2.5)] {
        let mut params = params_for("tools/list");
        params["_meta"]["progressToken"] = token;
        cases.push(http_case(
            "valid progress token",
            "tools/list",
            params,
            Expect::Request,
        ));
    }
    for token in [json!({}), json!(null), json!(true)] {
        let mut params = params_for("tools/list");
        params["_meta"]["progressToken"] = token;
        cases.push(http_case(
            "invalid progress token",
            "tools/list",
            params,
            err(INVALID_PARAMS, 400, "progressToken"),
        ));
    }
    for (method, key) in [
        ("tools/call", "name"),
        ("prompts/get", "name"),
        ("resources/read", "uri"),
    ] {
        let mut missing = params_for(method);
        missing.as_object_mut().unwrap().remove(key);
        let mut wrong = params_for(method);
        wrong[key] = json!(42);
        for (name, params, contains) in [
            ("name/uri missing", missing, "needs `params."),
            ("name/uri not a string", wrong, "must be a string"),
        ] {
            for headers in [
                None,
                Some(vec![
                    ("MCP-Protocol-Version", V.as_bytes().to_vec()),
                    ("Mcp-Method", method.as_bytes().to_vec()),
                ]),
            ] {
                cases.push(Case {
                    name,
                    message: request(method, Some(params.clone())),
                    headers,
                    expect: err(INVALID_PARAMS, 400, contains),
                });
            }
        }
    }
    cases
}

#[test]
fn every_rule_in_order() {
    let cases = cases();
    assert!(cases.len() > 100);
    for case in cases {
        let outcome = run(&case.message, case.headers.as_deref());
        match (&case.expect, outcome) {
            (Expect::Request, Ok(Validated::Request(request))) => {
                assert_eq!(request.id, json!(7), "{}", case.name);
            }
            (
                Expect::Error {
                    code,
                    status,
                    contains,
                },
                Err(rejection),
            ) => {
                assert_eq!(rejection.error.code, *code, "{}: {rejection:?}", case.name);
                assert_eq!(
                    rejection.http_status, *status,
                    "{}: {rejection:?}",
                    case.name
                );
                assert!(
                    rejection.error.message.contains(contains),
                    "{}: `{}` lacks `{contains}`",
                    case.name,
                    rejection.error.message
                );
                assert_eq!(rejection.id, Some(json!(7)), "{}", case.name);
            }
            (expect, outcome) => panic!("{}: expected {expect:?}, got {outcome:?}", case.name),
        }
    }
}

#[test]
fn unsupported_version_names_supported_and_requested() {
    let mut params = params_for("tools/list");
    params["_meta"][meta_keys::PROTOCOL_VERSION] = json!("1900-01-01");
    let rejection = run(&request("tools/list", Some(params)), None).unwrap_err();
    assert_eq!(
        rejection.error.data,
        Some(json!({"supported": ["2026-07-28"], "requested": "1900-01-01"}))
    );
    let legacy = request(
        "initialize",
        Some(json!({"protocolVersion": "2025-06-18", "capabilities": {}})),
    );
    let rejection = run(&legacy, None).unwrap_err();
    assert_eq!(
        rejection.error.data,
        Some(json!({"supported": ["2026-07-28"], "requested": "2025-06-18"}))
    );
    let modern = run(&request("initialize", Some(params_for("initialize"))), None).unwrap_err();
    assert_eq!(
        modern.error.data,
        Some(json!({"supported": ["2026-07-28"]}))
    );
}

#[test]
fn front_request_fields_are_filled() {
    let params = json!({
        "name": "echo",
        "arguments": {"x": 1},
        "_meta": {
            meta_keys::PROTOCOL_VERSION: V,
            meta_keys::CLIENT_CAPABILITIES: {"elicitation": {}},
            meta_keys::CLIENT_INFO: {"name": "c", "version": "1.0"},
            meta_keys::LOG_LEVEL: "warning",
            "progressToken": "p-1",
        }
    });
    let principal = Principal::from_credential(b"Bearer x");
    let message = request("tools/call", Some(params.clone()));
    let headers = header_map(&good_headers("tools/call", &params));
    let Ok(Validated::Request(request)) = validate(&message, Some(&headers), principal.clone())
    else {
        panic!("not a request")
    };
    assert_eq!(request.method, "tools/call");
    assert_eq!(request.params, params);
    assert_eq!(
        request.client_capabilities_value(),
        &json!({"elicitation": {}})
    );
    assert_eq!(
        request.client_info,
        Some(json!({"name": "c", "version": "1.0"}))
    );
    assert_eq!(request.log_level.as_deref(), Some("warning"));
    assert_eq!(request.progress_token, Some(json!("p-1")));
    assert_eq!(request.principal, principal);

    let bare = run(&request_bare(), None).unwrap();
    let Validated::Request(bare) = bare else {
        panic!()
    };
    assert_eq!(bare.client_info, None);
    assert_eq!(bare.log_level, None);
    assert_eq!(bare.progress_token, None);
}

fn request_bare() -> Message {
    request("tools/list", Some(params_for("tools/list")))
}

#[test]
fn notifications_and_responses() {
    let cancelled = |params: Option<Value>| Message::Notification {
        method: CANCELLED.into(),
        params,
    };
    match run(
        &cancelled(Some(json!({"requestId": "a", "reason": "user"}))),
        Some(&[]),
    ) {
        Ok(Validated::Cancelled { request_id, reason }) => {
            assert_eq!(request_id, json!("a"));
            assert_eq!(reason.as_deref(), Some("user"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        run(&cancelled(Some(json!({"requestId": 3}))), None),
        Ok(Validated::Cancelled { request_id, reason: None }) if request_id == json!(3)
    ));
    for bad in [
        None,
        Some(json!({})),
        Some(json!({"requestId": null})),
        Some(json!({"requestId": 1.5})),
        Some(json!([1])),
    ] {
        let rejection = run(&cancelled(bad.clone()), None).unwrap_err();
        assert_eq!(rejection.error.code, codes::INVALID_PARAMS, "{bad:?}");
        assert_eq!(rejection.id, None);
    }
    assert!(matches!(
        run(
            &Message::Notification {
                method: "notifications/initialized".into(),
                params: None
            },
            Some(&[])
        ),
        Ok(Validated::OtherNotification { method }) if method == "notifications/initialized"
    ));
    let response = Message::Response {
        id: json!(1),
        outcome: Ok(json!({})),
    };
    let rejection = run(&response, None).unwrap_err();
    assert_eq!(
        (rejection.error.code, rejection.http_status, rejection.id),
        (codes::INVALID_REQUEST, 400, None)
    );
}

#[test]
fn error_responses_leave_out_a_missing_id() {
    let error = ErrorObject::new(codes::PARSE_ERROR, "bad");
    assert_eq!(
        error_response(None, &error),
        json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "bad"}})
    );
    assert_eq!(
        error_response(Some(&Value::Null), &error),
        json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "bad"}})
    );
    assert_eq!(
        Rejection::new(Some(json!("x")), error, 400).to_value(),
        json!({"jsonrpc": "2.0", "id": "x", "error": {"code": -32700, "message": "bad"}})
    );
    let unreadable = Rejection::unreadable(&crate::jsonrpc::Message::parse(b"{").unwrap_err());
    assert_eq!(
        (unreadable.error.code, unreadable.http_status),
        (codes::PARSE_ERROR, 400)
    );
}

#[test]
fn http_status_of_every_code_the_front_emits() {
    use codes::*;
    for (code, status) in [
        (PARSE_ERROR, 400),
        (INVALID_REQUEST, 400),
        (METHOD_NOT_FOUND, 404),
        (INVALID_PARAMS, 200),
        (INTERNAL_ERROR, 200),
        (HEADER_MISMATCH, 400),
        (MISSING_REQUIRED_CLIENT_CAPABILITY, 400),
        (UNSUPPORTED_PROTOCOL_VERSION, 400),
        (-32000, 200),
    ] {
        assert_eq!(http_status(code), status, "{code}");
    }
}

#[test]
fn header_value_decoding() {
    assert_eq!(decode_header_value("plain").unwrap(), "plain");
    assert_eq!(
        decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(),
        "Hello, 世界"
    );
    assert_eq!(
        decode_header_value("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=").unwrap(),
        "=?base64?literal?="
    );
    assert_eq!(decode_header_value("=?base64??=").unwrap(), "");
    assert_eq!(
        decode_header_value("=?base64?SGVsbG8=").unwrap(),
        "=?base64?SGVsbG8="
    );
    assert!(decode_header_value("=?base64?SGVsbG8?=").is_err());
    assert!(decode_header_value("=?base64?SGVs!!!bG8=?=").is_err());
    assert!(decode_header_value("=?BASE64?SGVsbG8=?=").unwrap() == "=?BASE64?SGVsbG8=?=");
}
