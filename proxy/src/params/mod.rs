//! A front request's `params`, carried as the client's JSON text: the proxy reads the few members
//! it needs (`name`, `uri`, `requestState`, `inputResponses`, `_meta`'s 2026-07-28 members and
//! `progressToken`), and writes the legacy request's params by splicing the others as they came
//! (`arguments` above all). A `Value` tree is built only where one is needed (the pause digest,
//! the `Mcp-Param-*` check of an annotated tool, `subscriptions/listen`, the cluster's envelope),
//! on first use. Callgrind, bench/proxy-vs-nginx.md.
//!
//! Both fronts read a request this way ([`crate::front::read`]). A text the raw reader is not sure
//! to read as a `Value` parse would (see `scan.rs`) is read into a `Value`, as before: what the
//! proxy decides and sends is the same either way, up to the spelling of the forwarded JSON (the
//! client's own, with its member order, escapes and number literals, instead of serde_json's).

mod scan;
#[cfg(test)]
mod tests;

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::capabilities::CapabilityProfile;
use crate::jsonrpc::RawText;
use scan::{Meta, Scanned, Spliced};

/// A front request's `params` (`Null` when the request had none).
#[derive(Debug, Clone)]
pub struct Params(Repr);

#[derive(Debug, Clone)]
enum Repr {
    Tree(Value),
    Raw(Box<Raw>),
}

#[derive(Debug, Clone)]
struct Raw {
    text: Box<str>,
    scanned: Scanned,
    /// The `Value` tree, built from the text on first use.
    tree: OnceLock<Value>,
}

impl Default for Params {
    fn default() -> Self {
        Params(Repr::Tree(Value::Null))
    }
}

impl Params {
    fn raw(&self) -> Option<&Raw> {
        match &self.0 {
            Repr::Raw(raw) => Some(raw),
            Repr::Tree(_) => None,
        }
    }
}

/// `params._meta` as the front validates it.
pub enum MetaRef<'a> {
    Absent,
    NotObject,
    Object(MetaView<'a>),
}

/// `_meta["io.modelcontextprotocol/clientCapabilities"]` as the front validates it: an object
/// read as the profile the proxy keeps of it, or something else.
#[derive(Debug, Clone, PartialEq)]
pub enum CapabilitiesRead {
    NotObject,
    Object(CapabilityProfile),
}

/// A member that is not a string.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NotString;

/// `_meta["io.modelcontextprotocol/protocolVersion"]` as the raw reader keeps it: the version the
/// front speaks needs no copy of its text.
#[derive(Debug, Clone, PartialEq)]
pub enum VersionRead {
    /// [`crate::front::validate::PROTOCOL_VERSION`].
    Current,
    Other(Box<str>),
    NotString,
}

/// An object `params._meta`.
pub enum MetaView<'a> {
    Tree(&'a Map<String, Value>),
    Raw(&'a scan::MetaSlots),
}

impl<'a> MetaView<'a> {
    /// One of the members the front reads ([`crate::front::validate::meta_keys`]) but the
    /// protocol version and the client capabilities ([`MetaView::protocol_version`],
    /// [`MetaView::client_capabilities`]); other names are `None` on the raw path.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        use crate::front::validate::meta_keys;
        match self {
            MetaView::Tree(map) => map.get(key),
            MetaView::Raw(slots) => match key {
                meta_keys::CLIENT_INFO => slots.client_info.as_ref(),
                meta_keys::LOG_LEVEL => slots.log_level.as_ref(),
                meta_keys::PROGRESS_TOKEN => slots.progress_token.as_ref(),
                _ => None,
            },
        }
    }
}

impl<'a> MetaView<'a> {
    /// `_meta["io.modelcontextprotocol/protocolVersion"]`, when present: the string, or `Err` for
    /// anything else.
    pub fn protocol_version(&self) -> Option<Result<&'a str, NotString>> {
        use crate::front::validate::meta_keys;
        match self {
            MetaView::Tree(map) => map
                .get(meta_keys::PROTOCOL_VERSION)
                .map(|value| value.as_str().ok_or(NotString)),
            MetaView::Raw(slots) => slots
                .protocol_version
                .as_ref()
                .map(|version| match version {
                    VersionRead::Current => Ok(crate::front::validate::PROTOCOL_VERSION),
                    VersionRead::Other(version) => Ok(&**version),
                    VersionRead::NotString => Err(NotString),
                }),
        }
    }

    /// `_meta["io.modelcontextprotocol/clientCapabilities"]`, when present.
    pub fn client_capabilities(&self) -> Option<CapabilitiesRead> {
        use crate::front::validate::meta_keys;
        match self {
            MetaView::Tree(map) => map.get(meta_keys::CLIENT_CAPABILITIES).map(|value| {
                if value.is_object() {
                    CapabilitiesRead::Object(CapabilityProfile::from_client_capabilities(value))
                } else {
                    CapabilitiesRead::NotObject
                }
            }),
            MetaView::Raw(slots) => slots.client_capabilities.clone(),
        }
    }
}

/// The params of a request to the legacy server: a tree, or JSON text written as it is.
#[derive(Debug, Clone, PartialEq)]
pub enum OutParams {
    Tree(Value),
    Raw(RawText),
}

impl From<Value> for OutParams {
    fn from(value: Value) -> Self {
        OutParams::Tree(value)
    }
}

impl OutParams {
    pub fn into_value(self) -> Value {
        match self {
            OutParams::Tree(value) => value,
            OutParams::Raw(raw) => raw.to_value(),
        }
    }
}

impl From<Value> for Params {
    fn from(value: Value) -> Self {
        Params(Repr::Tree(value))
    }
}

impl PartialEq for Params {
    fn eq(&self, other: &Self) -> bool {
        self.tree() == other.tree()
    }
}

impl PartialEq<Value> for Params {
    fn eq(&self, other: &Value) -> bool {
        self.tree() == other
    }
}

impl Params {
    /// Reads a request's text in one pass (`scan.rs`): its id, its method and its params, held as
    /// the client's text. `None` for anything but a request with object params (or none), and
    /// whenever the `Value` parse has to decide; the caller then parses the message as before.
    pub fn read_request(bytes: &[u8]) -> Option<(Value, String, Option<Params>)> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut scanned = Scanned::default();
        let request = scan::scan_request(text, &mut scanned)?;
        let params = request.params.map(|(start, end)| {
            scan::make_relative(&mut scanned, start);
            Params(Repr::Raw(Box::new(Raw {
                text: text[start as usize..end as usize].into(),
                scanned,
                tree: OnceLock::new(),
            })))
        });
        Some((request.id, request.method, params))
    }

    /// Whether the params are held as the client's text (for tests).
    pub fn is_raw(&self) -> bool {
        self.raw().is_some()
    }

    /// The params as a `Value` tree (built from the text on first use).
    pub fn tree(&self) -> &Value {
        match &self.0 {
            Repr::Tree(value) => value,
            Repr::Raw(raw) => raw
                .tree
                .get_or_init(|| serde_json::from_str(&raw.text).unwrap_or(Value::Null)),
        }
    }

    pub fn to_value(&self) -> Value {
        self.tree().clone()
    }

    pub fn into_value(self) -> Value {
        match self.0 {
            Repr::Tree(value) => value,
            Repr::Raw(raw) => match raw.tree.into_inner() {
                Some(value) => value,
                None => serde_json::from_str(&raw.text).unwrap_or(Value::Null),
            },
        }
    }

    pub fn is_object(&self) -> bool {
        self.raw().is_some() || self.tree().is_object()
    }

    /// A member of the params object: read off the text for `name`, `uri`, `requestState` and
    /// `inputResponses`, from the tree for any other.
    pub fn get(&self, key: &str) -> Option<&Value> {
        let Some(raw) = self.raw() else {
            return self.tree().get(key);
        };
        let scanned = &raw.scanned;
        match key {
            "name" => scanned.name.as_ref(),
            "uri" => scanned.uri.as_ref(),
            "requestState" => scanned.request_state.as_ref(),
            "inputResponses" => scanned.input_responses.as_ref(),
            _ => self.tree().get(key),
        }
    }

    /// `params._meta`, for the front's validation.
    pub fn meta(&self) -> MetaRef<'_> {
        let Some(raw) = self.raw() else {
            return match self.tree().get("_meta") {
                None => MetaRef::Absent,
                Some(Value::Object(map)) => MetaRef::Object(MetaView::Tree(map)),
                Some(_) => MetaRef::NotObject,
            };
        };
        match &raw.scanned.meta {
            Meta::Absent => MetaRef::Absent,
            Meta::NotObject => MetaRef::NotObject,
            Meta::Object(slots) => MetaRef::Object(MetaView::Raw(slots)),
        }
    }

    /// `_meta`'s client info for the validated request: moved out of the slots of a request
    /// read as text (nothing reads it there once the front has checked it), copied from a tree.
    pub(crate) fn take_client_info(&mut self) -> Option<Value> {
        use crate::front::validate::meta_keys;
        match &mut self.0 {
            Repr::Raw(raw) => match &mut raw.scanned.meta {
                Meta::Object(slots) => slots.client_info.take(),
                _ => None,
            },
            Repr::Tree(_) => match self.meta() {
                MetaRef::Object(meta) => meta.get(meta_keys::CLIENT_INFO).cloned(),
                _ => None,
            },
        }
    }

    /// `params._meta.progressToken`.
    pub fn progress_token(&self) -> Option<&Value> {
        match self.meta() {
            MetaRef::Object(meta) => meta.get(crate::front::validate::meta_keys::PROGRESS_TOKEN),
            _ => None,
        }
    }

    /// The params to forward: without the MRTR fields (`inputResponses`, `requestState`) and
    /// without `_meta`'s `progressToken` and `io.modelcontextprotocol/` members; `progressToken`
    /// set to the proxy-minted one, if any. Raw params give raw text (the members spliced as
    /// they came; line breaks between tokens turned into spaces, so that a legacy stdio line stays
    /// one line); a tree gives a tree.
    pub fn legacy(&self, progress_token: Option<&str>) -> OutParams {
        let Some(raw) = self.raw() else {
            return OutParams::Tree(legacy_tree(self.tree(), progress_token));
        };
        let text = &raw.text;
        let scanned = &raw.scanned;
        let mut out = String::with_capacity(text.len() + 48);
        out.push('{');
        let mut first = true;
        let splice = |out: &mut String, member: &Spliced, first: &mut bool| {
            if !std::mem::take(first) {
                out.push(',');
            }
            if member.value.0 == member.key.1 + 1 {
                // Nothing but the `:` between them (`value_start`): one copy.
                out.push_str(&text[member.key.0 as usize..member.value.1 as usize]);
            } else {
                out.push_str(&text[member.key.0 as usize..member.key.1 as usize]);
                out.push(':');
                out.push_str(&text[member.value.0 as usize..member.value.1 as usize]);
            }
        };
        for member in &scanned.forwarded {
            splice(&mut out, member, &mut first);
        }
        let kept: &[Spliced] = match &scanned.meta {
            Meta::Object(slots) => &slots.forwarded,
            Meta::Absent | Meta::NotObject => &[],
        };
        if !kept.is_empty() || progress_token.is_some() {
            if !first {
                out.push(',');
            }
            out.push_str("\"_meta\":{");
            let mut first_in_meta = true;
            for member in kept {
                splice(&mut out, member, &mut first_in_meta);
            }
            if let Some(token) = progress_token {
                if !first_in_meta {
                    out.push(',');
                }
                out.push_str("\"progressToken\":");
                out.push_str(&Value::from(token).to_string());
            }
            out.push('}');
        }
        out.push('}');
        if memchr::memchr2(b'\n', b'\r', out.as_bytes()).is_some() {
            // Only between tokens: a JSON string holds no raw line break.
            out = out.replace(['\n', '\r'], " ");
        }
        // The members were checked when read (`scan.rs`), the rest is written here.
        OutParams::Raw(RawText::new_unchecked(out))
    }
}

/// [`Params::legacy`] of a tree.
pub fn legacy_tree(params: &Value, progress_token: Option<&str>) -> Value {
    let Some(object) = params.as_object() else {
        return params.clone();
    };
    // Built from the kept members only: the 2026 `_meta` (capabilities, client info) and
    // the MRTR fields are never copied just to be dropped.
    let mut legacy = Map::new();
    let mut meta = Map::new();
    for (key, value) in object {
        match key.as_str() {
            "inputResponses" | "requestState" => {}
            "_meta" => {
                for (key, value) in value.as_object().into_iter().flatten() {
                    if key != "progressToken" && !key.starts_with("io.modelcontextprotocol/") {
                        meta.insert(key.clone(), value.clone());
                    }
                }
            }
            _ => {
                legacy.insert(key.clone(), value.clone());
            }
        }
    }
    if let Some(token) = progress_token {
        meta.insert("progressToken".into(), token.into());
    }
    if !meta.is_empty() {
        legacy.insert("_meta".into(), Value::Object(meta));
    }
    Value::Object(legacy)
}

/// The reads of a request's params shared by the engine and the lanes, for [`Params`] and for a
/// plain `Value` (tests, requests the proxy makes itself).
pub trait ParamsRead {
    /// A member of the params object.
    fn member(&self, key: &str) -> Option<&Value>;
    /// `_meta.progressToken`.
    fn meta_progress_token(&self) -> Option<&Value>;
}

impl ParamsRead for Value {
    fn member(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }

    fn meta_progress_token(&self) -> Option<&Value> {
        self.get("_meta")?.get("progressToken")
    }
}

impl ParamsRead for Params {
    fn member(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }

    fn meta_progress_token(&self) -> Option<&Value> {
        self.progress_token()
    }
}

impl serde::Serialize for Params {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.tree().serialize(serializer)
    }
}
