//! The pass-through fast path for a legacy server's successful response: one serde_json pass
//! over `{"jsonrpc":"2.0","id":…,"result":…}` that keeps the result as the legacy server's text
//! (a span into the message, not a copy) and notes, while it reads the result object, which of
//! the members the front adds to results ([`Added`], engine/wire.rs) it has already, so that the
//! result is not parsed a second time to learn it (callgrind, bench/proxy-vs-nginx.md).
//!
//! serde_json reads every byte; the visitors only decide, as in params/scan.rs. A member name is
//! borrowed from the text, so a name's span is where its `&str` points, and a value ends before
//! the `,` or `}` that follows it (whitespace aside). Whatever this read does not decide (an
//! escape in an envelope member name, a lone surrogate escape in a member name of the result
//! object) is left to [`parse_envelope`], the read as it was before (serde_json into an envelope
//! with a `RawValue`), which accepts and rejects the same texts: the message read is the same
//! either way, only the members are then not known in advance.

use std::cell::Cell;
use std::fmt;
use std::ops::Range;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::Message;
use crate::json_spans::{key_span, value_end, value_start, WS};

/// A member the front adds to a result object when it is not there (engine/wire.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    ResultType,
    TtlMs,
    CacheScope,
}

impl Added {
    const ALL: [Added; 3] = [Added::ResultType, Added::TtlMs, Added::CacheScope];

    /// The member's name.
    pub fn name(self) -> &'static str {
        match self {
            Added::ResultType => "resultType",
            Added::TtlMs => "ttlMs",
            Added::CacheScope => "cacheScope",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The members the front adds (the values of engine/wire.rs), comma-separated, in the order of
/// [`Added`], for each set of them (indexed by its bits): written as one slice.
const ADDED_TEXT: [&str; 8] = [
    "",
    r#""resultType":"complete""#,
    r#""ttlMs":0"#,
    r#""resultType":"complete","ttlMs":0"#,
    r#""cacheScope":"private""#,
    r#""resultType":"complete","cacheScope":"private""#,
    r#""ttlMs":0,"cacheScope":"private""#,
    r#""resultType":"complete","ttlMs":0,"cacheScope":"private""#,
];

/// A result as JSON text (no `Value` tree is built), plus members to write at the start of the
/// object. The text never contains a line break (see [`parse_raw_response`]), so front lines and
/// SSE events stay single-line.
#[derive(Debug, Clone)]
pub struct RawResult {
    /// The text the result is part of: the legacy server's whole message when it was handed
    /// over ([`parse_raw_text`]), the result alone when it was copied.
    source: String,
    /// Where the result is in `source`.
    span: Range<usize>,
    /// Which [`Added`] members the object has (bits), when the read learned it.
    present: Option<u8>,
    /// The [`Added`] members to write at the start of the object (bits; written in the order of
    /// [`Added`], with no `String` built for them).
    added: u8,
}

impl RawResult {
    /// The JSON text as the legacy server sent it.
    pub fn text(&self) -> &str {
        &self.source[self.span.clone()]
    }

    /// Whether the result is a JSON object (only objects get members added).
    pub fn is_object(&self) -> bool {
        self.text().starts_with('{')
    }

    /// Whether the object has the member `added` (whatever its value, `null` included), when the
    /// read learned it: `None` when it did not, or when the object has the member twice.
    pub fn has(&self, added: Added) -> Option<bool> {
        self.present.map(|present| present & added.bit() != 0)
    }

    /// Adds the member `added` at the start of the object. Only for objects that do not have it
    /// already. Members are written in the order of [`Added`], whatever the order they are added.
    pub fn push(&mut self, added: Added) {
        debug_assert!(self.is_object());
        self.added |= added.bit();
    }

    /// What [`RawResult::write_to`] writes, worked out once.
    pub(super) fn pieces(&self) -> Pieces<'_> {
        let text = self.text().as_bytes();
        let added = ADDED_TEXT[usize::from(self.added)];
        // Whether the object has members after its `{` (the added ones are then followed by
        // `,`). Only JSON's ASCII whitespace can come before them in the checked text.
        let comma =
            !added.is_empty() && text[1..].iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'}');
        Pieces { text, added, comma }
    }

    /// How many bytes [`RawResult::write_to`] appends.
    pub fn written_len(&self) -> usize {
        self.pieces().len()
    }

    /// Appends the result, with the added members, to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        self.pieces().write_to(out);
    }

    /// The result, with the added members, as a `Value` tree.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        let mut text = Vec::with_capacity(self.written_len());
        self.write_to(&mut text);
        serde_json::from_slice(&text)
    }
}

/// Compares the JSON values, not the texts.
impl PartialEq for RawResult {
    fn eq(&self, other: &Self) -> bool {
        match (self.to_value(), other.to_value()) {
            (Ok(one), Ok(other)) => one == other,
            _ => self.text() == other.text() && self.added == other.added,
        }
    }
}

/// A raw result as it is written: its text, or `{`, the added members, a comma when the object
/// has members of its own, and the text after its `{`.
pub(super) struct Pieces<'a> {
    text: &'a [u8],
    added: &'static str,
    comma: bool,
}

impl Pieces<'_> {
    pub(super) fn len(&self) -> usize {
        self.text.len() + self.added.len() + usize::from(self.comma)
    }

    pub(super) fn write_to(&self, out: &mut Vec<u8>) {
        if self.added.is_empty() {
            out.extend_from_slice(self.text);
            return;
        }
        out.push(b'{');
        out.extend_from_slice(self.added.as_bytes());
        if self.comma {
            out.push(b',');
        }
        out.extend_from_slice(&self.text[1..]); // after `{`
    }
}

/// What [`read`] found: the id, where the result is, and which [`Added`] members it has.
#[derive(Debug, PartialEq)]
struct Read {
    id: Value,
    span: Range<usize>,
    present: Option<u8>,
}

/// The fast path for a successful response (`{"jsonrpc":"2.0","id":…,"result":…}` and nothing
/// else): the result is checked to be valid JSON but kept as text (copied out of `bytes`).
/// `None` for everything else (requests, notifications, errors, batches, unknown or duplicate
/// members, an escaped `jsonrpc`, text that is not UTF-8, and any text with a line break), which
/// [`Message::parse_batch`] then reads.
pub fn parse_raw_response(bytes: &[u8]) -> Option<Message> {
    let text = std::str::from_utf8(bytes).ok()?;
    let Read { id, span, present } = read(text)?;
    let source = text[span.clone()].to_owned();
    Some(Message::RawResponse {
        id,
        result: RawResult {
            span: 0..source.len(),
            source,
            present,
            added: 0,
        },
    })
}

/// [`parse_raw_response`] of a message the caller owns (an SSE event's data), surrounding ASCII
/// whitespace ignored: the result keeps the text and a span into it (nothing copied). The text
/// back when it is not such a response.
pub(crate) fn parse_raw_text(text: String) -> Result<Message, String> {
    let trimmed = text.trim_ascii();
    let offset = trimmed.as_ptr() as usize - text.as_ptr() as usize;
    let Some(Read { id, span, present }) = read(trimmed) else {
        return Err(text);
    };
    Ok(Message::RawResponse {
        id,
        result: RawResult {
            span: span.start + offset..span.end + offset,
            source: text,
            present,
            added: 0,
        },
    })
}

/// Reads a successful response (see [`parse_raw_response`]): one pass, else the envelope read.
fn read(text: &str) -> Option<Read> {
    if !text.starts_with('{') || memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
        return None;
    }
    let refused = Cell::new(false);
    let read = match scan(text, &refused) {
        Some(read) => read,
        // The envelope read would refuse it too: not read twice (notifications, requests).
        None if refused.get() => return None,
        None => parse_envelope(text)?,
    };
    let id = &read.id;
    if !(id.is_string() || id.is_i64() || id.is_u64() || id.is_null()) {
        return None;
    }
    Some(read)
}

/// The envelope as serde_json reads it into a struct, the result left as text.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResultEnvelope<'a> {
    jsonrpc: &'a str,
    id: Value,
    #[serde(borrow)]
    result: &'a RawValue,
}

/// The envelope read: what [`scan`] leaves undecided. The members are not learned.
fn parse_envelope(text: &str) -> Option<Read> {
    let envelope: RawResultEnvelope<'_> = serde_json::from_str(text).ok()?;
    if envelope.jsonrpc != "2.0" {
        return None;
    }
    let start = envelope.result.get().as_ptr() as usize - text.as_ptr() as usize;
    Some(Read {
        id: envelope.id,
        span: start..start + envelope.result.get().len(),
        present: None,
    })
}

/// The one pass: `None` for anything it does not decide, or that is not a successful response
/// (then `refused` is set: the envelope read refuses it as well).
fn scan(text: &str, refused: &Cell<bool>) -> Option<Read> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let read = deserializer
        .deserialize_map(Envelope { text, refused })
        .ok()?;
    deserializer.end().ok()?;
    Some(read)
}

/// Gives up: [`parse_envelope`] decides.
fn give_up<E: serde::de::Error>() -> E {
    E::custom("left to the envelope read")
}

/// Not a plain successful response, whichever read decides: an unknown, duplicate or missing
/// envelope member (`deny_unknown_fields` and serde's derive refuse them), `jsonrpc` not "2.0".
fn refuse<E: serde::de::Error>(refused: &Cell<bool>) -> E {
    refused.set(true);
    E::custom("not a plain successful response")
}

/// The response object.
struct Envelope<'t> {
    text: &'t str,
    refused: &'t Cell<bool>,
}

impl<'de> Visitor<'de> for Envelope<'de> {
    type Value = Read;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON-RPC response")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Read, A::Error> {
        let text = self.text;
        let (mut jsonrpc, mut id) = (false, None);
        // The result's start and members, and its end once the next token shows it.
        let mut result: Option<(Range<usize>, Option<u8>)> = None;
        let mut open = false;
        while let Some(name) = map.next_key::<&'de str>()? {
            if std::mem::take(&mut open) {
                let end = value_end(text, key_span(text, name).0, ',').ok_or_else(give_up)?;
                if let Some((span, _)) = &mut result {
                    span.end = end;
                }
            }
            match name {
                // Duplicates fail here as in the envelope read.
                "jsonrpc" if !jsonrpc => {
                    jsonrpc = true;
                    if map.next_value::<&'de str>()? != "2.0" {
                        return Err(refuse(self.refused));
                    }
                }
                "id" if id.is_none() => id = Some(map.next_value::<Value>()?),
                "result" if result.is_none() => {
                    let start = value_start(text, key_span(text, name).1).ok_or_else(give_up)?;
                    let present = if text.as_bytes().get(start) == Some(&b'{') {
                        map.next_value_seed(Members)?
                    } else {
                        map.next_value::<IgnoredAny>()?;
                        None
                    };
                    result = Some((start..start, present));
                    open = true;
                }
                _ => return Err(refuse(self.refused)),
            }
        }
        let (Some(id), Some((mut span, present)), true) = (id, result, jsonrpc) else {
            return Err(refuse(self.refused));
        };
        if open {
            let end = value_end(text, text.trim_end_matches(WS).len(), '}');
            span.end = end.ok_or_else(give_up)?;
        }
        Ok(Read { id, span, present })
    }
}

/// The result object: which [`Added`] members it has (`None` when one of them is there twice),
/// every member value checked as a `RawValue` is.
struct Members;

impl<'de> DeserializeSeed<'de> for Members {
    type Value = Option<u8>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Members {
    type Value = Option<u8>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<u8>, A::Error> {
        let (mut present, mut twice) = (0u8, false);
        while let Some(name) = map.next_key::<Name>()? {
            if let Some(added) = name.0 {
                twice |= present & added.bit() != 0;
                present |= added.bit();
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok((!twice).then_some(present))
    }
}

/// A member name of the result object, escapes decoded (as a `Value` map's keys are): which
/// [`Added`] member it names, if any.
struct Name(Option<Added>);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl Visitor<'_> for NameVisitor {
            type Value = Name;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a member name")
            }
            fn visit_str<E>(self, name: &str) -> Result<Name, E> {
                Ok(Name(
                    Added::ALL.into_iter().find(|added| added.name() == name),
                ))
            }
        }
        deserializer.deserialize_str(NameVisitor)
    }
}

#[cfg(test)]
mod tests;
