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

/// Where the value of the member whose name ends at `key_end` starts (past the `:`).
pub(crate) fn value_start(text: &str, key_end: usize) -> Option<usize> {
    let rest = text.get(key_end..)?;
    let rest = rest.trim_start_matches(WS).strip_prefix(':')?;
    Some(text.len() - rest.trim_start_matches(WS).len())
}

/// Where a value ends that serde_json read and followed with `separator` (`,` or `}`), the
/// next token after which starts at `next`.
pub(crate) fn value_end(text: &str, next: usize, separator: char) -> Option<usize> {
    let before = text.get(..next)?.trim_end_matches(WS);
    Some(before.strip_suffix(separator)?.trim_end_matches(WS).len())
}
