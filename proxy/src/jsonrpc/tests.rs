use super::*;

#[test]
fn successful_responses_take_the_raw_path_and_everything_else_does_not() {
    let text = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"h\u00e9 1.5e300"}],"n":0.1}}"#;
    let Some(Message::RawResponse { id, result }) = parse_raw_response(text) else {
        panic!("a plain successful response takes the fast path");
    };
    assert_eq!(id, json!(7));
    assert_eq!(
        result.text(),
        r#"{"content":[{"type":"text","text":"h\u00e9 1.5e300"}],"n":0.1}"#
    );
    assert_eq!(
        Message::parse(text).unwrap(),
        Message::Response {
            id: json!(7),
            outcome: Ok(result.to_value().unwrap())
        }
    );
    for other in [
        &br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..],
        br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
        br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"gone"}}"#,
        br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}"#,
        br#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#,
        br#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
        br#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
        br#"{"jsonrpc":"2.0","id":[1],"result":{}}"#,
        br#"{"jsonrpc":"2.0","id":1,"result":{},"extra":1}"#,
        br#"{"jsonrpc":"2.0","id":1,"result":{"a":tru}}"#,
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\n\"result\":{}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\r}}",
        br#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
    ] {
        assert!(
            parse_raw_response(other).is_none(),
            "{}",
            String::from_utf8_lossy(other)
        );
    }
}

#[test]
fn raw_results_get_members_spliced_in_and_serialise_like_values() {
    for (result, members, expected, written) in [
        (
            r#"{"a":1}"#,
            &[Added::ResultType][..],
            json!({"a": 1, "resultType": "complete"}),
            r#"{"resultType":"complete","a":1}"#,
        ),
        (
            "{ }",
            &[Added::ResultType, Added::TtlMs],
            json!({"resultType": "complete", "ttlMs": 0}),
            r#"{"resultType":"complete","ttlMs":0 }"#,
        ),
        (
            r#"{ "b" :[]}"#,
            &[Added::CacheScope, Added::ResultType, Added::TtlMs],
            json!({"b": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}),
            r#"{"resultType":"complete","ttlMs":0,"cacheScope":"private", "b" :[]}"#,
        ),
        (
            r#"{"x":[1,{"y":null}]}"#,
            &[],
            json!({"x": [1, {"y": null}]}),
            r#"{"x":[1,{"y":null}]}"#,
        ),
        ("[1,2]", &[], json!([1, 2]), "[1,2]"),
    ] {
        let text = format!(r#"{{"jsonrpc":"2.0","id":"k","result":{result}}}"#);
        let Some(Message::RawResponse { id, mut result }) = parse_raw_response(text.as_bytes())
        else {
            panic!("{text}");
        };
        for member in members {
            result.push(*member);
        }
        assert_eq!(result.to_value().unwrap(), expected);
        let mut out = Vec::new();
        result.write_to(&mut out);
        assert_eq!(String::from_utf8(out).unwrap(), written);
        assert_eq!(result.written_len(), written.len());
        let message = Message::RawResponse { id, result };
        let line = message.to_line();
        assert!(!line.contains('\n'));
        assert_eq!(line.as_bytes(), message.to_vec());
        let read: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            read,
            json!({"jsonrpc": "2.0", "id": "k", "result": expected})
        );
        assert_eq!(read, message.to_value());
        assert_eq!(
            serde_json::to_value(&message).unwrap(),
            read,
            "Serialize agrees"
        );
    }
}

#[test]
fn requests_notifications_and_responses_round_trip() {
    for text in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope","data":[1]}}"#,
    ] {
        let message = Message::parse(text.as_bytes()).unwrap();
        let again = Message::from_value(message.to_value()).unwrap();
        assert_eq!(message, again, "{text}");
        assert_eq!(message.to_line(), message.to_value().to_string(), "{text}");
        assert_eq!(message.to_vec(), message.to_line().into_bytes(), "{text}");
    }
}

/// Found by the `legacy_messages` fuzz target: a long number literal was parsed one ulp off,
/// so the message the proxy re-serialised carried another number than the one received.
#[test]
fn long_number_literals_pass_through_unchanged() {
    let digits = "3".repeat(121);
    for (literal, exact) in [
        (digits.as_str(), 3.333_333_333_333_333e120_f64),
        ("3.333333333333333e+120", 3.333_333_333_333_333e120),
        ("0.30000000000000004441", 0.300_000_000_000_000_04),
        ("1.7976931348623157e308", f64::MAX),
    ] {
        let text = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{literal}}}}}"#
        );
        let message = Message::parse(text.as_bytes()).unwrap();
        let Message::Notification {
            params: Some(params),
            ..
        } = &message
        else {
            panic!("{message:?}");
        };
        assert_eq!(params["requestId"].as_f64(), Some(exact), "{literal}");
        let again = Message::parse(message.to_line().as_bytes()).unwrap();
        assert_eq!(again, message, "{literal}");
    }
}

#[test]
fn malformed_messages_are_rejected_with_the_right_code() {
    let cases = [
        ("{", codes::PARSE_ERROR),
        ("[]", codes::INVALID_REQUEST),
        (r#"{"id":1,"method":"x"}"#, codes::INVALID_REQUEST),
        (
            r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
            codes::INVALID_REQUEST,
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            codes::INVALID_REQUEST,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
            codes::INVALID_REQUEST,
        ),
        (r#"{"jsonrpc":"2.0","id":1}"#, codes::INVALID_REQUEST),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"message":"no code"}}"#,
            codes::INVALID_REQUEST,
        ),
    ];
    for (text, code) in cases {
        let error = Message::parse_batch(text.as_bytes())
            .and_then(|mut messages| messages.remove(0))
            .unwrap_err();
        assert_eq!(error.to_error().code, code, "{text}");
    }
}

/// `Message::parse` reads the envelope off the parser: the same message or the same error
/// as parsing a `Value` first.
#[test]
fn parse_agrees_with_the_value_path() {
    fn by_value(bytes: &[u8]) -> Result<Message, ParseError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|error| ParseError::Json(error.to_string()))?;
        if value.is_array() {
            return Err(ParseError::Shape("batches are not allowed"));
        }
        Message::from_value(value)
    }
    let texts: &[&[u8]] = &[
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        br#"{"jsonrpc":"2.0","id":"a","result":{"x":[1,2.5,null,true]}}"#,
        br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"m","data":{}}}"#,
        br#"{"jsonrpc":"2.0","id":7,"error":{"message":"m"}}"#,
        br#"{"jsonrpc":"2.0","id":7,"result":1,"error":{"code":1}}"#,
        br#"{"jsonrpc":"2.0","id":7}"#,
        br#"{"jsonrpc":"2.0"}"#,
        br#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
        br#"{"jsonrpc":2,"id":1,"method":"m"}"#,
        br#"{"id":1,"method":"m"}"#,
        br#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
        br#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
        br#"{"jsonrpc":"2.0","id":-3,"method":"m"}"#,
        br#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":3}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
        br#"{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}"#,
        br#"{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"m"}"#,
        br#"{"json\u0072pc":"2.0","\u0069d":1,"method":"m","extra":{"deep":[{}]}}"#,
        br#"{"jsonrpc":"2.\u0030","id":"\ud83d\ude00","method":"m"}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"m","extra":"\ud800"}"#,
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"extra\":\"\xff\"}",
        b"[\"\xff\"]",
        br#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
        br#"[]"#,
        br#"[1,"#,
        br#""text""#,
        br#"3"#,
        br#"-1.5e3"#,
        br#"1e400"#,
        br#"true"#,
        br#"null"#,
        br#"{}"#,
        br#""#,
        br#"   "#,
        br#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"m",}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"m""#,
        br#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"m"}"#,
        br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\u0000\n"}}"#,
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":\"\x01\"}}",
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}  "#,
        br#"{1:2}"#,
    ];
    for text in texts {
        assert_eq!(
            Message::parse(text),
            by_value(text),
            "{}",
            String::from_utf8_lossy(text)
        );
    }
    for deep in [
        format!("{}{}", "[".repeat(200), "]".repeat(200)),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}1{}}}"#,
            r#"{"a":"#.repeat(130),
            "}".repeat(130)
        ),
    ] {
        assert_eq!(Message::parse(deep.as_bytes()), by_value(deep.as_bytes()));
    }
}

#[test]
fn batches_from_old_servers_are_read() {
    let messages = Message::parse_batch(
        br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"},3]"#,
    )
    .unwrap();
    assert_eq!(messages.len(), 3);
    assert!(messages[0].is_ok() && messages[1].is_ok() && messages[2].is_err());
    assert!(Message::parse(b"[{}]").is_err());
}

/// A raw response's text is as long as the vector it is written to (no spare capacity), for
/// every kind of id.
#[test]
fn raw_responses_fill_their_vector_exactly() {
    for id in [
        json!(0),
        json!(9),
        json!(10),
        json!(u64::MAX),
        json!(-1),
        json!(i64::MIN),
        json!(null),
        json!("k"),
        json!("a\"b\\c\u{1}é"),
        json!(1.5),
    ] {
        let text = r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#;
        let Some(Message::RawResponse { mut result, .. }) = parse_raw_response(text.as_bytes())
        else {
            panic!("{text}");
        };
        result.push(Added::ResultType);
        let message = Message::RawResponse {
            id: id.clone(),
            result,
        };
        let out = message.to_vec();
        assert_eq!(out.len(), out.capacity(), "{id}");
        assert_eq!(out, serde_json::to_vec(&message).unwrap(), "{id}");
    }
}
