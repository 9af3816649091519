//! The raw reading of a front request against the `Value` one: the same message or error, the
//! same validation outcome, the same reads and the same legacy params, on many texts.

use serde_json::{json, Value};

use super::{legacy_tree, OutParams, ParamsRead};
use crate::front::read::FrontMessage;
use crate::front::validate::{validate_front, validate_owned, Validated};
use crate::jsonrpc::Message;
use crate::request::Principal;

const META: &str = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}"#;

/// A `tools/call` whose params members are `members` (the 2026-07-28 `_meta` added unless
/// `members` has one).
fn call(members: &str) -> String {
    let meta = if members.contains("_meta") {
        String::new()
    } else {
        format!(r#","_meta":{{{META}}}"#)
    };
    format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{{members}{meta}}}}}"#)
}

/// A `tools/call` whose `_meta` declares the client capabilities `capabilities`.
fn caps(capabilities: &str) -> String {
    call(&format!(
        r#""name":"echo","_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{capabilities}}}"#
    ))
}

fn texts() -> Vec<Vec<u8>> {
    let deep = |levels: usize| {
        format!(
            r#""name":"t","arguments":{{"a":{}1{}}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        )
    };
    let mut texts: Vec<String> = vec![
        call(r#""name":"echo","arguments":{"text":"hi"}"#),
        call(r#""arguments":{"text":"hi"},"name":"echo""#),
        call(r#""name":"echo""#),
        call(r#""name":"echo","arguments":{}"#),
        call(r#""name":"echo","arguments":[]"#),
        call(r#""name":"echo","arguments":null"#),
        call(r#""name":7,"arguments":{}"#),
        call(r#""arguments":{}"#),
        call(r#""name":{"a":1},"arguments":{}"#),
        // Escaped names and values.
        call(r#""n\u0061me":"echo","arguments":{"t\"x":"a\"b\\c\/d\n"}"#),
        call(
            r#""name":"echo","\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
        ),
        call(
            r#""name":"echo","_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
        ),
        call(r#""name":"\u00e9cho","arguments":{"é":"\ud83d\ude00","😀":"日本"}"#),
        // Duplicates: at the top, in `arguments`, in `_meta`, deep down.
        call(r#""name":"echo","name":"other","arguments":{}"#),
        call(r#""name":"echo","arguments":{"a":1,"a":2}"#),
        call(r#""name":"echo","arguments":{"a":1},"arguments":{"b":2}"#),
        call(r#""name":"echo","arguments":{"x":[{"a":1,"b":{"c":1,"c":[]}}]}"#),
        call(r#""name":"echo","arguments":{"a":1,"\u0061":2}"#),
        call(
            r#""name":"echo","_meta":{"progressToken":1,"progressToken":2,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
        ),
        call(
            r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-01-01","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
        ),
        // Invalid strings, numbers and nesting.
        call(r#""name":"echo","arguments":{"a":"\ud800"}"#),
        call(r#""name":"echo","arguments":{"\udc00":1}"#),
        call(r#""name":"\ud800","arguments":{}"#),
        call(r#""name":"echo","requestState":"\ud800""#),
        call(r#""name":"echo","arguments":{"a":1e999}"#),
        call(r#""name":"echo","arguments":{"a":01}"#),
        call(r#""name":"echo","arguments":{"a":1.0,"b":1e2,"c":-0,"d":12345678901234567890123,"e":0.1}"#),
        call(r#""name":"echo","arguments":[1e-400,-1e-400,0e0,1E+2,-0.0,1.7976931348623157e308]"#),
        call(r#""name":"echo","arguments":[1.7976931348623157e309]"#),
        call(r#""name":"echo","arguments":[-123456789012345678901234567890,18446744073709551616]"#),
        call(r#""name":"echo","arguments":[999999999999999999,-999999999999999999,9223372036854775808]"#),
        call(&format!(r#""name":"echo","arguments":[1{}]"#, "0".repeat(400))),
        call(r#""name":"echo","arguments":{"a":"\u00""}"#),
        call(r#""name":"echo","arguments":{"a":"\ud83d\u0041"}"#),
        call(r#""name":"echo","arguments":{"a":"\x"}"#),
        call("\"name\":\"echo\",\"arguments\":{\"a\":\"tab\there\"}"),
        call(r#""name":"echo","arguments":{"a":"\u0000\u001f\b\f"}"#),
        call(&deep(90)),
        call(&deep(99)),
        call(&deep(100)),
        call(&deep(124)),
        call(&deep(126)),
        call(&deep(130)),
        // MRTR members, progress, log level, client info.
        call(r#""name":"echo","arguments":{},"requestState":"mrs1.abc","inputResponses":{"k":{"action":"accept"}}"#),
        call(r#""name":"echo","requestState":5"#),
        call(r#""name":"echo","inputResponses":{"k":1,"k":2}"#),
        call(r#""name":"echo","inputResponses":[1]"#),
        call(
            r#""name":"echo","_meta":{"progressToken":"p-1","io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/other":[1],"trace":"t","x":{"y":[1,2]},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
        ),
        call(
            r#""name":"echo","_meta":{"progressToken":null,"io.modelcontextprotocol/logLevel":"loud","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
        ),
        call(
            r#""name":"echo","_meta":{"progressToken":[1],"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
        ),
        call(r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#),
        call(r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientCapabilities":{}}"#),
        call(r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}"#),
        call(r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18","io.modelcontextprotocol/clientCapabilities":{}}"#),
        call(r#""name":"echo","_meta":{}"#),
        call(r#""name":"echo","_meta":[1,2]"#),
        call(r#""name":"echo","_meta":"x""#),
        call(r#""name":"echo","_meta":{"a":"\ud800","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#),
        call(r#""name":"echo","_meta":{"a":1,"a":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#),
        // Client capabilities: the profile read off the text as off the `Value`.
        caps(r#"{}"#),
        caps(r#"{"elicitation":{"form":{},"url":{}},"sampling":{"context":{},"tools":{}},"roots":{"listChanged":true}}"#),
        caps(r#"{"elicitation":{"url":null},"sampling":{"tools":1},"roots":[],"experimental":{"a":[1]}}"#),
        caps(r#"{"elicitation":{"form":1,"other":2},"sampling":{"context":{}}}"#),
        caps(r#"{"elicitation":[],"sampling":"x","roots":null}"#),
        caps(r#"{"elicitation":true,"sampling":1.5,"roots":{}}"#),
        caps(r#"{"elicitation":{"\u0066orm":{}},"sampling":{"context":{},"context":{}}}"#),
        caps(r#"{"elicitation":{},"elicitation":{"url":{}}}"#),
        caps(r#"{"elicitation":{"url":"\ud800"}}"#),
        caps(r#"{"roots":{"a":1e999}}"#),
        caps(r#"{"x":[{"form":{}}],"elicitation":{"forms":{},"urls":{}}}"#),
        caps(r#"[{"elicitation":{}}]"#),
        caps(r#""elicitation""#),
        caps(r#"null"#),
        // Protocol versions: escaped, other, not a string.
        call(r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28","io.modelcontextprotocol/clientCapabilities":{}}"#),
        call(r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-2\u0039","io.modelcontextprotocol/clientCapabilities":{}}"#),
        call(r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"","io.modelcontextprotocol/clientCapabilities":{}}"#),
        call(r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":{"v":"2026-07-28"},"io.modelcontextprotocol/clientCapabilities":{}}"#),
        call(r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":["2026-07-28"],"io.modelcontextprotocol/clientCapabilities":{}}"#),
        call(r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":null,"io.modelcontextprotocol/clientCapabilities":{}}"#),
        call(r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"\ud800","io.modelcontextprotocol/clientCapabilities":{}}"#),
        call(r#""name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":{"a":1,"a":2},"io.modelcontextprotocol/clientCapabilities":{}}"#),
        // Line breaks and spaces between tokens.
        format!(
            "{{\n  \"jsonrpc\": \"2.0\",\n  \"id\": \"a\",\n  \"method\": \"tools/call\",\n  \"params\": {{\r\n    \"name\" : \"echo\" ,\n    \"arguments\" :\n {{ \"a\" : [ 1 ,\n 2 ] }} ,\n \"_meta\" : {{ {META} , \"k\" :\n true }}\n  }}\n}}\n"
        ),
        // Where members end: `params` first, `_meta` in the middle or last, a forwarded member
        // last in `_meta`, spaces before every `,` and `}`.
        format!(
            "{{ \"params\" : {{ \"name\" : \"echo\" , \"_meta\" : {{ {META} , \"k\" : [ 1 ] }} }} , \"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\" }}"
        ),
        call(&format!(
            r#""_meta":{{{META},"t":"x" }} ,"name":"echo" ,"arguments":{{ }} "#
        )),
        call(&format!(r#""_meta":{{"t":{{"u":[]}},{META}}},"name":"echo""#)),
        call(&format!(r#""name":"echo","_meta":{{{META},"t":1e308}}"#)),
        call(&format!(r#""name":"echo","_meta":{{{META},"t":1e309}}"#)),
        call(&format!(r#""name":"echo","_meta":{{{META},"\u0074":1}}"#)),
        call(&format!(r#""name":"echo","_meta":{{{META},"t":1,"t":2}}"#)),
        call(&format!(r#""name":"echo","_meta":{{{META},"progressToken":1,"progressToken":2}}"#)),
        // Nested names, numbers and strings in a forwarded member.
        call(r#""name":"echo","arguments":{"a":{"b":{"c":1,"c":2}}}"#),
        call(r#""name":"echo","arguments":{"a":{"b":{"c":1,"d":2}},"b":{"c":3}}"#),
        call(r#""name":"echo","arguments":{"a":{"\u0062":1}}"#),
        call(r#""name":"echo","arguments":{"a":[{"b":"\udc00"}]}"#),
        call(r#""name":"echo","arguments":{"a":-1e400,"b":18446744073709551616}"#),
        call(r#""name":"echo","arguments":{"a":-9223372036854775809,"b":-0,"c":"\ud83d\ude00"}"#),
        // Trailing bytes.
        format!("{} \u{e9}", call(r#""name":"echo""#)),
        format!("{}\u{a0}", call(r#""name":"echo""#)),
        format!("{} \r\n\t", call(r#""name":"echo""#)),
        format!("{}}}", call(r#""name":"echo""#)),
        // Other methods, envelopes and shapes.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c"}}"#.into(),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{{{META}}}}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{{"uri":"file:///a","_meta":{{{META}}}}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{{"uri":3,"_meta":{{{META}}}}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{{"filter":{{"a":1}},"_meta":{{{META}}}}}}}"#),
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","protocolVersion":"x"}}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"nope","params":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1,2]}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{},"params":{"a":"\ud800"}}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":"\ud800"},"params":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":1},"x":"\ud800"}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":1}} x"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":1}"#.into(),
        r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":[1],"method":"tools/call","params":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{"name":"x"},"result":1}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":7,"params":{}}"#.into(),
        r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{}}"#.into(),
        r#"{"id":1,"method":"tools/call","params":{}}"#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"r"}}"#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/other","params":{"a":"\ud800"}}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#.into(),
        r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#.into(),
        r#""x""#.into(),
        "".into(),
        "{".into(),
    ];
    texts.push(call(&format!(
        r#""name":"echo","arguments":{{{}}}"#,
        (0..40)
            .map(|n| format!(r#""k{n}":{n}"#))
            .collect::<Vec<_>>()
            .join(",")
    )));
    for (members, last) in [
        (20, ""),
        (20, r#","k12":0"#),
        (20, r#","k2":0"#),
        (31, r#","k30":0"#),
    ] {
        texts.push(call(&format!(
            r#""name":"echo","arguments":{{{}{last}}}"#,
            (0..members)
                .map(|n| format!(r#""k{n}":{n}"#))
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    texts.push(call(&format!(
        r#""name":"echo","arguments":{{{},"k3":0}}"#,
        (0..40)
            .map(|n| format!(r#""k{n}":{n}"#))
            .collect::<Vec<_>>()
            .join(",")
    )));
    for bad in [
        "1.", ".5", "+1", "1e", "-", "00", "0x1", "NaN", "tru", "-01", "1e+", "\"a",
    ] {
        texts.push(call(&format!(r#""name":"echo","arguments":[{bad}]"#)));
    }
    let mut bytes: Vec<Vec<u8>> = texts.into_iter().map(String::into_bytes).collect();
    // Invalid UTF-8 in a forwarded string and in a name.
    let mut invalid = call(r#""name":"echo","arguments":{"a":"XX"}"#).into_bytes();
    let at = invalid.windows(2).position(|w| w == b"XX").unwrap();
    invalid[at] = 0xff;
    bytes.push(invalid.clone());
    invalid[at] = b'"';
    bytes.push(invalid);
    bytes
}

/// What a validation outcome says, comparable across the two paths.
fn outcome(validated: Result<Validated, crate::front::validate::Rejection>) -> String {
    match validated {
        Err(rejection) => format!("{rejection:?}"),
        Ok(Validated::Request(request)) => format!(
            "request {} {} {} {} {:?} {:?} {:?} {:?} {:?}",
            request.id,
            request.method,
            request.params.tree(),
            request.client_capabilities_value(),
            request.client_capabilities.profile(),
            request.client_info,
            request.log_level,
            request.progress_token,
            request.param_headers.as_ref().map(|headers| headers.len()),
        ),
        Ok(other) => format!("{other:?}"),
    }
}

#[test]
fn the_raw_reading_agrees_with_the_value_one() {
    let mut raw = 0;
    let headers = {
        let mut headers = http::HeaderMap::new();
        headers.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
        headers.insert("mcp-method", "tools/call".parse().unwrap());
        headers.insert("mcp-name", "echo".parse().unwrap());
        headers
    };
    for text in texts() {
        let shown = String::from_utf8_lossy(&text).into_owned();
        let front = FrontMessage::parse(&text);
        let value = Message::parse(&text);
        assert_eq!(
            front.clone().map(FrontMessage::into_message),
            value.clone(),
            "{shown}"
        );
        let (Ok(front), Ok(value)) = (front, value) else {
            continue;
        };
        for headers in [None, Some(&headers)] {
            assert_eq!(
                outcome(validate_front(
                    front.clone(),
                    headers,
                    Principal::anonymous()
                )),
                outcome(validate_owned(
                    value.clone(),
                    headers,
                    Principal::anonymous()
                )),
                "{shown}"
            );
        }
        let FrontMessage::Request {
            params: Some(params),
            ..
        } = front
        else {
            continue;
        };
        raw += usize::from(params.is_raw());
        let tree = params.tree().clone();
        for key in [
            "name",
            "uri",
            "requestState",
            "inputResponses",
            "arguments",
            "x",
        ] {
            assert_eq!(params.member(key), tree.member(key), "{key} of {shown}");
        }
        assert_eq!(
            params.meta_progress_token(),
            tree.meta_progress_token(),
            "{shown}"
        );
        for token in [None, Some("mrtr-1")] {
            let legacy = params.legacy(token);
            if let OutParams::Raw(text) = &legacy {
                assert!(!text.get().contains(['\n', '\r']), "{shown}");
            }
            assert_eq!(legacy.into_value(), legacy_tree(&tree, token), "{shown}");
        }
    }
    assert!(raw >= 30, "only {raw} texts took the raw path");
}

#[test]
fn a_plain_call_is_read_raw_and_spliced_as_it_came() {
    let text = call(r#""name":"echo","arguments":{"text":"h\u00e9","n":1.50},"requestState":"s""#);
    let Ok(FrontMessage::Request {
        params: Some(params),
        ..
    }) = FrontMessage::parse(text.as_bytes())
    else {
        panic!("not a request");
    };
    assert!(params.is_raw());
    assert_eq!(params.get("name"), Some(&json!("echo")));
    assert_eq!(params.get("requestState"), Some(&json!("s")));
    let OutParams::Raw(legacy) = params.legacy(Some("t-1")) else {
        panic!("not spliced");
    };
    assert_eq!(
        legacy.get(),
        r#"{"name":"echo","arguments":{"text":"h\u00e9","n":1.50},"_meta":{"progressToken":"t-1"}}"#
    );
    let message = Message::RawRequest {
        id: json!(3),
        method: "tools/call".into(),
        params: legacy,
    };
    let line = message.to_line();
    assert_eq!(
        line,
        r#"{"id":3,"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"h\u00e9","n":1.50},"_meta":{"progressToken":"t-1"}}}"#
    );
    assert_eq!(
        serde_json::from_str::<Value>(&line).unwrap(),
        message.to_value()
    );
}

#[test]
fn the_client_capabilities_profile_is_read_off_the_text() {
    use crate::capabilities::CapabilityProfile;
    for capabilities in [
        r#"{}"#,
        r#"{"elicitation":{}}"#,
        r#"{"elicitation":{"url":{}},"roots":{}}"#,
        r#"{"elicitation":{"form":{},"url":{}},"sampling":{"context":{},"tools":{}}}"#,
        r#"{"elicitation":[],"sampling":{"tools":null},"roots":1}"#,
    ] {
        let text = caps(capabilities);
        let Ok(front @ FrontMessage::Request { .. }) = FrontMessage::parse(text.as_bytes()) else {
            panic!("not a request: {text}");
        };
        let FrontMessage::Request {
            params: Some(params),
            ..
        } = &front
        else {
            panic!("no params: {text}");
        };
        assert!(params.is_raw(), "{text}");
        let Ok(Validated::Request(request)) = validate_front(front, None, Principal::anonymous())
        else {
            panic!("refused: {text}");
        };
        let value: Value = serde_json::from_str(capabilities).unwrap();
        assert_eq!(request.client_capabilities_value(), &value, "{text}");
        assert_eq!(
            request.client_capabilities.profile(),
            &CapabilityProfile::from_client_capabilities(&value),
            "{text}"
        );
    }
}
