use super::*;
use serde_json::json;

/// The read before the one pass (the envelope read alone), as `read` did it.
fn envelope_read(text: &str) -> Option<(Value, &str)> {
    if !text.starts_with('{') || text.contains(['\n', '\r']) {
        return None;
    }
    let read = parse_envelope(text)?;
    let id = &read.id;
    (id.is_string() || id.is_i64() || id.is_u64() || id.is_null())
        .then(|| (read.id.clone(), &text[read.span]))
}

/// Which [`Added`] members a result object has, from its `Value` tree (`None`: not an object).
fn present_in_tree(result: &str) -> Option<u8> {
    let value: Value = serde_json::from_str(result).ok()?;
    let object = value.as_object()?;
    Some(
        Added::ALL
            .into_iter()
            .filter(|added| object.contains_key(added.name()))
            .fold(0, |bits, added| bits | added.bit()),
    )
}

/// The one pass reads what the envelope read reads (the same id, the same result text), and
/// when it learns the members, they are the ones the result's `Value` tree has.
fn check(text: &str) -> Option<Read> {
    let read = read(text);
    let expected = envelope_read(text);
    assert_eq!(
        read.as_ref()
            .map(|read| (read.id.clone(), &text[read.span.clone()])),
        expected,
        "{text}"
    );
    if let Some(Read {
        present: Some(present),
        span,
        ..
    }) = &read
    {
        // (A result whose tree does not build, a lone surrogate in a value, is not compared.)
        if let Some(in_tree) = present_in_tree(&text[span.clone()]) {
            assert_eq!(*present, in_tree, "{text}");
        }
    }
    read
}

#[test]
fn the_result_is_located_wherever_it_is_and_its_members_are_learned() {
    for (text, result, present) in [
        (
            r#"{"result":{"content":[{"type":"text","text":"hi"}]},"jsonrpc":"2.0","id":3}"#,
            r#"{"content":[{"type":"text","text":"hi"}]}"#,
            Some(0),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"a\"b","result":{"resultType":"x","ttlMs":null}}"#,
            r#"{"resultType":"x","ttlMs":null}"#,
            Some(0b011),
        ),
        (
            "{ \"jsonrpc\" :\t\"2.0\" , \"result\" : { \"cacheScope\" : 1 } ,\t\"id\" : null }",
            r#"{ "cacheScope" : 1 }"#,
            Some(0b100),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":{"resultType":1},"b":[{"ttlMs":2}]}}"#,
            r#"{"a":{"resultType":1},"b":[{"ttlMs":2}]}"#,
            Some(0),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultTyp\u0065":1}}"#,
            r#"{"resultTyp\u0065":1}"#,
            Some(0b001),
        ),
        // Twice: not learned (the `Value` path decides which one counts).
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"ttlMs":1,"ttlMs":2}}"#,
            r#"{"ttlMs":1,"ttlMs":2}"#,
            None,
        ),
        // Other members twice are forwarded as they came, as before.
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2}}"#,
            r#"{"a":1,"a":2}"#,
            Some(0),
        ),
        // Left to the envelope read: an escaped envelope member name, a lone surrogate in a
        // member name of the result (the raw read lets it through, as before).
        (
            r#"{"jsonrp\u0063":"2.0","id":1,"result":{"a":1}}"#,
            r#"{"a":1}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"\ud800":1,"resultType":1}}"#,
            r#"{"\ud800":1,"resultType":1}"#,
            None,
        ),
        (r#"{"jsonrpc":"2.0","id":1,"result":3}"#, "3", None),
        (r#"{"jsonrpc":"2.0","id":1,"result":1e400}"#, "1e400", None),
        (r#"{"jsonrpc":"2.0","id":1,"result":[{}]}"#, "[{}]", None),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":"\ud800"}"#,
            r#""\ud800""#,
            None,
        ),
        (r#"{"jsonrpc":"2.0","id":1,"result":null}"#, "null", None),
        (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, "{}", Some(0)),
    ] {
        let read = check(text).unwrap_or_else(|| panic!("{text}"));
        assert_eq!(&text[read.span], result, "{text}");
        assert_eq!(read.present, present, "{text}");
    }
}

#[test]
fn anything_else_is_refused_by_both_reads() {
    for text in [
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"gone"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#,
        r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#,
        r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.\u0030","id":1,"result":{}}"#,
        r#"{"jsonrpc":2,"id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":[1],"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"extra":1}"#,
        r#"{"jsonrpc":"2.0","id":1}"#,
        r#"{"id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"a":tru}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"a":}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"a":1,}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"a" 1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{1:1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}} x"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"a":"\x"}}"#,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":\"\u{1}\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"\u{1}\":1}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\n\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\r}}",
        r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
        "{",
        "{}",
        "",
    ] {
        assert!(check(text).is_none(), "{text}");
    }
}

#[test]
fn bytes_that_are_not_utf8_are_refused() {
    let text = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":\"\xff\"}}";
    assert!(parse_raw_response(text).is_none());
}

#[test]
fn a_handed_over_text_keeps_the_result_where_it_is() {
    let text = " \t{\"result\":{\"a\":1},\"jsonrpc\":\"2.0\",\"id\":9}\x0c ".to_owned();
    let Ok(Message::RawResponse { id, result }) = parse_raw_text(text) else {
        panic!("a successful response");
    };
    assert_eq!(id, json!(9));
    assert_eq!(result.text(), r#"{"a":1}"#);
    assert_eq!(result.has(Added::ResultType), Some(false));
    let other = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#;
    assert_eq!(parse_raw_text(other.to_owned()).unwrap_err(), other);
}

proptest::proptest! {
    /// Whatever the text, the one pass reads what the envelope read reads, and never panics.
    #[test]
    fn the_one_pass_agrees_with_the_envelope_read(
        head in proptest::prop_oneof![
            proptest::strategy::Just(r#"{"jsonrpc":"2.0","id":1,"result":"#.to_owned()),
            proptest::strategy::Just(r#"{ "id" : "x" , "jsonrpc" : "2.0" , "result" : "#.to_owned()),
            proptest::strategy::Just(r#"{"result":"#.to_owned()),
        ],
        body in r#"[{}\[\]":, \tabrTtlMsypeu0-9\\.-]{0,40}"#,
        tail in proptest::prop_oneof![
            proptest::strategy::Just("}".to_owned()),
            proptest::strategy::Just(r#","jsonrpc":"2.0","id":2}"#.to_owned()),
            proptest::strategy::Just(" } ".to_owned()),
        ],
    ) {
        let text = format!("{head}{body}{tail}");
        check(&text);
        for added in ["resultType", "ttlMs", "cacheScope"] {
            let object = format!(r#"{head}{{"{added}":{body}}}{tail}"#);
            check(&object);
        }
    }
}

/// Each set's text holds exactly its members, in the order of `Added`, with the front's values.
#[test]
fn the_added_text_of_each_set_holds_its_members_in_order() {
    for bits in 0..8u8 {
        let text = ADDED_TEXT[usize::from(bits)];
        let object: serde_json::Map<String, Value> =
            serde_json::from_str(&format!("{{{text}}}")).unwrap();
        let mut at = 0;
        for added in Added::ALL {
            let name = format!("\"{}\"", added.name());
            match text.find(&name) {
                Some(position) => {
                    assert!(bits & added.bit() != 0 && position >= at, "{text}");
                    at = position;
                }
                None => assert!(bits & added.bit() == 0, "{text}"),
            }
        }
        assert_eq!(object.len(), bits.count_ones() as usize, "{text}");
        for (name, value) in &object {
            let expected = match name.as_str() {
                "resultType" => json!("complete"),
                "ttlMs" => json!(0),
                _ => json!("private"),
            };
            assert_eq!(value, &expected, "{text}");
        }
    }
}
