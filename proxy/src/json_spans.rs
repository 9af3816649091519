//! Where a member's name and value are in a JSON text that serde_json reads with member names
//! borrowed from it: a name's span is where its `&str` points, a value starts after the name's
//! `:` and ends before the `,` or `}` that follows it (whitespace aside). The one-pass reads of a
//! front request (params/scan.rs) and of a legacy answer (jsonrpc/raw.rs) splice by these spans.

/// JSON's whitespace.
pub(crate) const WS: [char; 4] = [' ', '\t', '\n', '\r'];

/// The span of a member name (quotes included), from the name serde_json borrowed from `text`.
pub(crate) fn key_span(text: &str, name: &str) -> (usize, usize) {
    let start = name.as_ptr() as usize - text.as_ptr() as usize - 1;
    (start, start + name.len() + 2)
}

/// Whether `byte` is JSON whitespace ([`WS`]).
fn is_ws(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// Where the value of the member whose name ends at `key_end` starts (past the `:`).
///
/// By bytes: this runs for every member of a request and of an answer (callgrind,
/// bench/proxy-vs-nginx.md). A byte inside a UTF-8 character is neither whitespace nor `:`.
pub(crate) fn value_start(text: &str, key_end: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = key_end;
    while bytes.get(at).copied().is_some_and(is_ws) {
        at += 1;
    }
    if bytes.get(at) != Some(&b':') {
        return None;
    }
    at += 1;
    while bytes.get(at).copied().is_some_and(is_ws) {
        at += 1;
    }
    Some(at)
}

/// Where a value ends that serde_json read and followed with `separator` (`,` or `}`), the
/// next token after which starts at `next`.
pub(crate) fn value_end(text: &str, next: usize, separator: char) -> Option<usize> {
    debug_assert!(separator.is_ascii());
    if !text.is_char_boundary(next) {
        return None;
    }
    let bytes = text.as_bytes();
    let mut end = next;
    while end > 0 && is_ws(bytes[end - 1]) {
        end -= 1;
    }
    if end == 0 || bytes[end - 1] != separator as u8 {
        return None;
    }
    end -= 1;
    while end > 0 && is_ws(bytes[end - 1]) {
        end -= 1;
    }
    Some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `str` reading these replace.
    fn value_start_by_chars(text: &str, key_end: usize) -> Option<usize> {
        let rest = text.get(key_end..)?;
        let rest = rest.trim_start_matches(WS).strip_prefix(':')?;
        Some(text.len() - rest.trim_start_matches(WS).len())
    }

    fn value_end_by_chars(text: &str, next: usize, separator: char) -> Option<usize> {
        let before = text.get(..next)?.trim_end_matches(WS);
        Some(before.strip_suffix(separator)?.trim_end_matches(WS).len())
    }

    #[test]
    fn bytes_and_chars_agree() {
        for text in [
            "",
            ":",
            " : x",
            "\"a\" :\t\r\n 1 ,\n\"b\":2 }",
            "\"é\":\"日本\" , \"😀\" : [ ] }",
            "  ,  ",
            "}",
            "\u{a0}:\u{a0},",
            "x :",
        ] {
            for at in 0..=text.len() + 1 {
                assert_eq!(
                    value_start(text, at),
                    value_start_by_chars(text, at),
                    "{text:?} {at}"
                );
                for separator in [',', '}'] {
                    assert_eq!(
                        value_end(text, at, separator),
                        value_end_by_chars(text, at, separator),
                        "{text:?} {at} {separator}"
                    );
                }
            }
        }
    }
}
