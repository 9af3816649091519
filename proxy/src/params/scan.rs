//! One pass of serde_json over a front request's text: the envelope's members read, `params`'
//! members located (spans into the text), the few the proxy reads deserialized into `Value`s,
//! every other member checked by a visitor that builds nothing.
//!
//! serde_json reads every byte; the visitors only decide. Member names are borrowed from the
//! text, so a name's span is where its `&str` points, a value starts after the name's `:` and
//! ends before the `,` or `}` that follows it (whitespace aside). Anything else gives up
//! (`None`), and the caller then parses the message as before: any escape in a member name, a
//! duplicate member name at any depth (a `Value` keeps the last one; forwarding the text would
//! forward both), an object of more than [`MAX_MEMBERS`] members, and whatever serde_json
//! rejects (the checking visitor asks for numbers and strings as a `Value` parse does: a number
//! out of range or a lone surrogate fails here as there). So whatever it reads, a `Value` parse
//! reads the same way.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{CapabilitiesRead, VersionRead};
use crate::capabilities::CapabilityProfile;
use crate::front::validate::meta_keys;

/// Objects with more members than this are left to the `Value` parse (the duplicate check is a
/// scan of the names seen so far).
const MAX_MEMBERS: usize = 32;

/// A byte range of the text.
pub(super) type Span = (u32, u32);

/// A member forwarded as it came: its name (quotes included) and its value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Spliced {
    pub key: Span,
    pub value: Span,
}

impl Spliced {
    fn shifted(self, by: u32) -> Spliced {
        Spliced {
            key: (self.key.0 - by, self.key.1 - by),
            value: (self.value.0 - by, self.value.1 - by),
        }
    }
}

/// What a scan of a `params` object found (spans into the params text).
#[derive(Debug, Clone, Default)]
pub(super) struct Scanned {
    /// The members forwarded to the legacy server as they came: all but `_meta`,
    /// `requestState` and `inputResponses`, in their order.
    pub forwarded: Vec<Spliced>,
    pub name: Option<Value>,
    pub uri: Option<Value>,
    pub request_state: Option<Value>,
    pub input_responses: Option<Value>,
    pub meta: Meta,
}

/// `params._meta`.
#[derive(Debug, Clone, Default)]
pub(super) enum Meta {
    #[default]
    Absent,
    /// Present, not an object.
    NotObject,
    Object(MetaSlots),
}

/// An object `_meta`: the members the front reads, parsed; the ones forwarded to the legacy
/// server (all but `progressToken` and the `io.modelcontextprotocol/` ones), located.
#[derive(Debug, Clone, Default)]
pub struct MetaSlots {
    pub protocol_version: Option<VersionRead>,
    pub client_capabilities: Option<CapabilitiesRead>,
    pub client_info: Option<Value>,
    pub log_level: Option<Value>,
    pub progress_token: Option<Value>,
    pub(super) forwarded: Vec<Spliced>,
}

/// A request read by [`scan_request`].
pub(super) struct ScannedRequest {
    pub id: Value,
    pub method: String,
    /// The params' span in the message (what they hold is in the [`Scanned`] given to
    /// [`scan_request`]).
    pub params: Option<Span>,
}

/// Reads `text` as a JSON-RPC request (`jsonrpc` "2.0", a string or integer `id`, a string
/// `method`, an object `params` or none); `None` for anything else or when the `Value` parse has
/// to decide. What the params hold is read into `scanned` (spans into the message text): in
/// place, since a [`Scanned`] is a few hundred bytes that each move would copy (callgrind,
/// bench/proxy-vs-nginx.md).
pub(super) fn scan_request(text: &str, scanned: &mut Scanned) -> Option<ScannedRequest> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let request = deserializer
        .deserialize_map(Envelope { text, scanned })
        .ok()?;
    deserializer.end().ok()?;
    if !(request.id.is_string() || request.id.is_i64() || request.id.is_u64()) {
        return None;
    }
    Some(request)
}

use crate::json_spans::WS;

/// Gives up: the caller parses the message as a `Value`.
fn give_up<E: serde::de::Error>() -> E {
    E::custom("left to the Value parse")
}

/// [`crate::json_spans::key_span`] as a [`Span`] (a message is far below 4 GiB: the front's
/// size limit).
fn key_span(text: &str, name: &str) -> Span {
    let (start, end) = crate::json_spans::key_span(text, name);
    (start as u32, end as u32)
}

/// [`crate::json_spans::value_start`] in a [`Span`]'s units.
fn value_start(text: &str, key_end: u32) -> Option<u32> {
    crate::json_spans::value_start(text, key_end as usize).map(|at| at as u32)
}

/// [`crate::json_spans::value_end`] in a [`Span`]'s units.
fn value_end(text: &str, next: u32, separator: char) -> Option<u32> {
    crate::json_spans::value_end(text, next as usize, separator).map(|at| at as u32)
}

/// The member names of one object so far (names borrowed from the text: compared as they are).
struct Names<'a> {
    seen: [&'a str; MAX_MEMBERS],
    count: usize,
}

impl Default for Names<'_> {
    fn default() -> Self {
        Names {
            seen: [""; MAX_MEMBERS],
            count: 0,
        }
    }
}

impl<'a> Names<'a> {
    /// An error for a duplicate, or past [`MAX_MEMBERS`].
    fn insert<E: serde::de::Error>(&mut self, name: &'a str) -> Result<(), E> {
        if self.count == MAX_MEMBERS || self.seen[..self.count].contains(&name) {
            return Err(give_up());
        }
        self.seen[self.count] = name;
        self.count += 1;
        Ok(())
    }
}

/// A visitor's methods for the scalars (serde_json has checked them as a `Value` parse would):
/// each gives `$value`. `scalars!(value, but strings)` leaves `visit_str` to the visitor.
macro_rules! scalars {
    ($value:expr) => {
        scalars!($value, but strings);

        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
    ($value:expr, but strings) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }

        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }

        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }

        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

/// A seed that reads any JSON value with its own visitor (which decides by the value's kind).
macro_rules! any_value_seed {
    ($seed:ty => $value:ty) => {
        impl<'de> DeserializeSeed<'de> for $seed {
            type Value = $value;

            fn deserialize<D: Deserializer<'de>>(
                self,
                deserializer: D,
            ) -> Result<Self::Value, D::Error> {
                deserializer.deserialize_any(self)
            }
        }
    };
}

/// Checks any value as a `Value` parse reads it, building nothing.
struct Check;

impl<'de> DeserializeSeed<'de> for Check {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(Check)
    }
}

impl<'de> Visitor<'de> for Check {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    scalars!(());

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Check)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut names = Names::default();
        while let Some(name) = map.next_key::<&'de str>()? {
            names.insert(name)?;
            map.next_value_seed(Check)?;
        }
        Ok(())
    }
}

/// The request object.
struct Envelope<'t, 'o> {
    text: &'t str,
    scanned: &'o mut Scanned,
}

impl<'de> Visitor<'de> for Envelope<'de, '_> {
    type Value = ScannedRequest;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON-RPC request")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ScannedRequest, A::Error> {
        let text = self.text;
        let mut names = Names::default();
        let (mut jsonrpc_ok, mut id, mut method) = (false, None, None);
        let mut params = None;
        // The params' start and last member, until the next token shows where they end.
        let mut open: Option<(u32, Tail)> = None;
        while let Some(name) = map.next_key::<&'de str>()? {
            names.insert(name)?;
            let key = key_span(text, name);
            if let Some((start, tail)) = open.take() {
                let end = value_end(text, key.0, ',').ok_or_else(give_up)?;
                close(text, self.scanned, tail, end)?;
                params = Some((start, end));
            }
            match name {
                "params" => {
                    let start = value_start(text, key.1).ok_or_else(give_up)?;
                    let scanned = &mut *self.scanned;
                    open = Some((start, map.next_value_seed(ParamsSeed { text, scanned })?));
                }
                "jsonrpc" => jsonrpc_ok = map.next_value::<&'de str>()? == "2.0",
                "id" => id = Some(map.next_value::<Value>()?),
                "method" => method = Some(map.next_value::<String>()?),
                _ => map.next_value_seed(Check)?,
            }
        }
        if let Some((start, tail)) = open {
            let end = value_end(text, text.trim_end_matches(WS).len() as u32, '}');
            let end = end.ok_or_else(give_up)?;
            close(text, self.scanned, tail, end)?;
            params = Some((start, end));
        }
        match (jsonrpc_ok, id, method) {
            (true, Some(id), Some(method)) => Ok(ScannedRequest { id, method, params }),
            _ => Err(give_up()),
        }
    }
}

/// The last member of an object, whose end is not yet known.
#[derive(Clone, Copy)]
enum Tail {
    /// Not a span kept (or no member).
    Untracked,
    /// The last forwarded member.
    Forwarded,
    /// An object `_meta` (params only), its own last forwarded member pending or not.
    Meta(bool),
}

/// Records that the params, whose last member is `tail`, end at `end`.
fn close<E: serde::de::Error>(
    text: &str,
    scanned: &mut Scanned,
    tail: Tail,
    end: u32,
) -> Result<(), E> {
    let last = value_end(text, end, '}').ok_or_else(give_up)?;
    settle(text, scanned, tail, last)
}

/// Records that the params member `tail` ends at `end`.
fn settle<E: serde::de::Error>(
    text: &str,
    scanned: &mut Scanned,
    tail: Tail,
    end: u32,
) -> Result<(), E> {
    match (tail, &mut scanned.meta) {
        (Tail::Forwarded, _) => {
            if let Some(last) = scanned.forwarded.last_mut() {
                last.value.1 = end;
            }
        }
        (Tail::Meta(true), Meta::Object(meta)) => {
            let last = value_end(text, end, '}').ok_or_else(give_up)?;
            if let Some(member) = meta.forwarded.last_mut() {
                member.value.1 = last;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `params`: an object, read into a default [`Scanned`] (spans into the message text); gives
/// its last member, whose end the token after the object shows.
struct ParamsSeed<'t, 'o> {
    text: &'t str,
    scanned: &'o mut Scanned,
}

impl<'de> DeserializeSeed<'de> for ParamsSeed<'de, '_> {
    type Value = Tail;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ParamsSeed<'de, '_> {
    type Value = Tail;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let text = self.text;
        let scanned = self.scanned;
        // Room for the usual members (`name`, `arguments`): one allocation, no growth.
        scanned.forwarded = Vec::with_capacity(4);
        let mut names = Names::default();
        let mut tail = Tail::Untracked;
        while let Some(name) = map.next_key::<&'de str>()? {
            names.insert(name)?;
            let key = key_span(text, name);
            if let Tail::Forwarded | Tail::Meta(true) = tail {
                let end = value_end(text, key.0, ',').ok_or_else(give_up)?;
                settle(text, scanned, tail, end)?;
            }
            let start = value_start(text, key.1).ok_or_else(give_up)?;
            tail = Tail::Untracked;
            match name {
                "_meta" => {
                    let meta = &mut scanned.meta;
                    match map.next_value_seed(MetaSeed { text, meta })? {
                        Some(last) => tail = Tail::Meta(matches!(last, Tail::Forwarded)),
                        None => scanned.meta = Meta::NotObject,
                    }
                }
                "requestState" => scanned.request_state = Some(map.next_value()?),
                "inputResponses" => scanned.input_responses = Some(map.next_value()?),
                _ => {
                    match name {
                        "name" => scanned.name = Some(map.next_value()?),
                        "uri" => scanned.uri = Some(map.next_value()?),
                        _ => map.next_value_seed(Check)?,
                    }
                    scanned.forwarded.push(Spliced {
                        key,
                        value: (start, 0),
                    });
                    tail = Tail::Forwarded;
                }
            }
        }
        Ok(tail)
    }
}

/// `params._meta`: an object read into `meta` as [`MetaSlots`] (giving its last member, whose
/// end the token after the object shows), or anything else checked (`None`).
struct MetaSeed<'t, 'o> {
    text: &'t str,
    meta: &'o mut Meta,
}

impl<'de> DeserializeSeed<'de> for MetaSeed<'de, '_> {
    type Value = Option<Tail>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed<'de, '_> {
    type Value = Option<Tail>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    scalars!(None);

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Check.visit_seq(seq)?;
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let text = self.text;
        *self.meta = Meta::Object(MetaSlots::default());
        let Meta::Object(meta) = self.meta else {
            unreachable!("set above");
        };
        let mut names = Names::default();
        let mut pending = false;
        while let Some(name) = map.next_key::<&'de str>()? {
            names.insert(name)?;
            let key = key_span(text, name);
            if std::mem::take(&mut pending) {
                let end = value_end(text, key.0, ',').ok_or_else(give_up)?;
                if let Some(last) = meta.forwarded.last_mut() {
                    last.value.1 = end;
                }
            }
            match name {
                meta_keys::PROTOCOL_VERSION => {
                    meta.protocol_version = Some(map.next_value_seed(VersionSeed)?);
                    continue;
                }
                meta_keys::CLIENT_CAPABILITIES => {
                    meta.client_capabilities = Some(map.next_value_seed(CapabilitiesSeed)?);
                    continue;
                }
                _ => {}
            }
            let slot = match name {
                meta_keys::CLIENT_INFO => Some(&mut meta.client_info),
                meta_keys::LOG_LEVEL => Some(&mut meta.log_level),
                meta_keys::PROGRESS_TOKEN => Some(&mut meta.progress_token),
                _ => None,
            };
            match slot {
                Some(slot) => *slot = Some(map.next_value()?),
                None => {
                    let start = value_start(text, key.1).ok_or_else(give_up)?;
                    map.next_value_seed(Check)?;
                    if !name.starts_with("io.modelcontextprotocol/") {
                        meta.forwarded.push(Spliced {
                            key,
                            value: (start, 0),
                        });
                        pending = true;
                    }
                }
            }
        }
        Ok(Some(if pending {
            Tail::Forwarded
        } else {
            Tail::Untracked
        }))
    }
}

/// `_meta["io.modelcontextprotocol/protocolVersion"]`: a string compared with the version the
/// front speaks (copied only when it differs), anything else checked.
struct VersionSeed;

any_value_seed!(VersionSeed => VersionRead);

impl<'de> Visitor<'de> for VersionSeed {
    type Value = VersionRead;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    scalars!(VersionRead::NotString, but strings);

    fn visit_str<E>(self, version: &str) -> Result<Self::Value, E> {
        Ok(if version == crate::front::validate::PROTOCOL_VERSION {
            VersionRead::Current
        } else {
            VersionRead::Other(version.into())
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Check.visit_seq(seq)?;
        Ok(VersionRead::NotString)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Check.visit_map(map)?;
        Ok(VersionRead::NotString)
    }
}

/// `_meta["io.modelcontextprotocol/clientCapabilities"]`: an object read as its
/// [`CapabilityProfile`] (what [`CapabilityProfile::from_client_capabilities`] reads of its
/// `Value`), anything else checked. No `Value` is built: the object stays in the text.
struct CapabilitiesSeed;

any_value_seed!(CapabilitiesSeed => CapabilitiesRead);

impl<'de> Visitor<'de> for CapabilitiesSeed {
    type Value = CapabilitiesRead;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    scalars!(CapabilitiesRead::NotObject);

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Check.visit_seq(seq)?;
        Ok(CapabilitiesRead::NotObject)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut names = Names::default();
        let (mut elicitation, mut sampling, mut roots) = (None, None, false);
        while let Some(name) = map.next_key::<&'de str>()? {
            names.insert(name)?;
            match name {
                "elicitation" => elicitation = map.next_value_seed(Members(["form", "url"]))?,
                "sampling" => sampling = map.next_value_seed(Members(["context", "tools"]))?,
                "roots" => roots = map.next_value_seed(Members([]))?.is_some(),
                _ => map.next_value_seed(Check)?,
            }
        }
        Ok(CapabilitiesRead::Object(CapabilityProfile::from_members(
            elicitation,
            sampling,
            roots,
        )))
    }
}

/// A value checked ([`Check`]): for an object, which of these names it has (`None` for
/// anything else).
struct Members<const N: usize>([&'static str; N]);

impl<'de, const N: usize> DeserializeSeed<'de> for Members<N> {
    type Value = Option<[bool; N]>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, const N: usize> Visitor<'de> for Members<N> {
    type Value = Option<[bool; N]>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    scalars!(None);

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Check.visit_seq(seq)?;
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut names = Names::default();
        let mut found = [false; N];
        while let Some(name) = map.next_key::<&'de str>()? {
            names.insert(name)?;
            if let Some(at) = self.0.iter().position(|wanted| *wanted == name) {
                found[at] = true;
            }
            map.next_value_seed(Check)?;
        }
        Ok(Some(found))
    }
}

/// Makes the spans of `scanned` relative to the params text, which starts at `start`.
pub(super) fn make_relative(scanned: &mut Scanned, start: u32) {
    for member in &mut scanned.forwarded {
        *member = member.shifted(start);
    }
    if let Meta::Object(meta) = &mut scanned.meta {
        for member in &mut meta.forwarded {
            *member = member.shifted(start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_refuse_duplicates_and_more_than_the_limit() {
        let names: Vec<String> = (0..MAX_MEMBERS + 1).map(|n| format!("k{n}")).collect();
        for count in [1, 8, MAX_MEMBERS - 1, MAX_MEMBERS] {
            let mut seen = Names::default();
            for name in &names[..count] {
                assert!(seen.insert::<serde_json::Error>(name).is_ok(), "{name}");
            }
            for name in &names[..count] {
                assert!(seen.insert::<serde_json::Error>(name).is_err(), "{name}");
            }
            assert_eq!(
                seen.insert::<serde_json::Error>(&names[count]).is_ok(),
                count < MAX_MEMBERS,
                "{count}"
            );
        }
    }
}
