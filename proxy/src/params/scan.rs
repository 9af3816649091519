//! One pass over a front request's text: the envelope's members read, `params`' members located
//! (spans into the text), the few the proxy reads parsed into `Value`s, every other byte checked
//! to be JSON a `Value` parse accepts, without building anything.
//!
//! The scanner accepts a strict subset of what serde_json accepts and gives up (`None`) on
//! anything else, and the caller then parses the message as before: any escape in a member name,
//! a duplicate member name at any depth (a `Value` keeps the last one; forwarding the text would
//! forward both), a lone surrogate escape, a control character in a string, a number whose value
//! is not a finite `f64`, nesting deeper than [`MAX_DEPTH`], any syntax error. So whatever it
//! reads, a `Value` parse reads the same way.

use serde_json::Value;

use crate::front::validate::meta_keys;

/// The deepest nesting read here (serde_json's recursion limit is 128).
const MAX_DEPTH: u32 = 100;

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
    pub protocol_version: Option<Value>,
    pub client_capabilities: Option<Value>,
    pub client_info: Option<Value>,
    pub log_level: Option<Value>,
    pub progress_token: Option<Value>,
    pub(super) forwarded: Vec<Spliced>,
}

/// A request read by [`scan_request`].
pub(super) struct ScannedRequest {
    pub id: Value,
    pub method: String,
    /// The params' span in the message, and what they hold (spans into the params text).
    pub params: Option<(Span, Scanned)>,
}

/// Reads `text` as a JSON-RPC request (`jsonrpc` "2.0", a string or integer `id`, a string
/// `method`, an object `params` or none); `None` for anything else or when the `Value` parse has
/// to decide.
pub(super) fn scan_request(text: &str) -> Option<ScannedRequest> {
    let mut scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        at: 0,
    };
    scanner.ws();
    scanner.expect(b'{')?;
    let mut names = Names::default();
    let (mut jsonrpc_ok, mut id, mut method, mut params) = (false, None, None, None);
    scanner.ws();
    if !scanner.eat(b'}') {
        loop {
            scanner.ws();
            let (name, _) = scanner.name()?;
            names.insert(name)?;
            scanner.ws();
            scanner.expect(b':')?;
            scanner.ws();
            let start = scanner.at;
            match name {
                "params" => {
                    let scanned = scanner.params()?;
                    params = Some(((start as u32, scanner.at as u32), scanned));
                }
                _ => {
                    scanner.value(1)?;
                    let value = &text[start..scanner.at];
                    match name {
                        "jsonrpc" => jsonrpc_ok = value == "\"2.0\"",
                        "id" => id = Some(value),
                        "method" => method = Some(value),
                        _ => {}
                    }
                }
            }
            scanner.ws();
            if scanner.eat(b'}') {
                break;
            }
            scanner.expect(b',')?;
        }
    }
    scanner.ws();
    if scanner.at != scanner.bytes.len() || !jsonrpc_ok {
        return None;
    }
    let id = id?;
    let id: Value = match id.parse::<i64>() {
        Ok(number) if !id.starts_with('-') || number != 0 => Value::from(number),
        _ => serde_json::from_str(id).ok()?,
    };
    if !(id.is_string() || id.is_i64() || id.is_u64()) {
        return None;
    }
    let method = method?;
    let method = match plain_string(method) {
        Some(plain) => plain.to_owned(),
        None => match serde_json::from_str(method).ok()? {
            Value::String(method) => method,
            _ => return None,
        },
    };
    Some(ScannedRequest { id, method, params })
}

/// The contents of a checked JSON string without escapes.
fn plain_string(text: &str) -> Option<&str> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let ate = self.peek() == Some(byte);
        self.at += usize::from(ate);
        ate
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// The run of plain string bytes from here: up to the next `"` or `\\`, which must come
    /// (`None` at the end of the text or at a control character).
    fn plain_run(&mut self) -> Option<u8> {
        let rest = &self.bytes[self.at..];
        let stop = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[..stop].iter().any(|&byte| byte < 0x20) {
            return None;
        }
        self.at += stop;
        Some(rest[stop])
    }

    /// A member name without escapes: the name and its span (quotes included).
    fn name(&mut self) -> Option<(&'a str, Span)> {
        let start = self.at;
        self.expect(b'"')?;
        if self.plain_run()? != b'"' {
            return None;
        }
        let name = &self.text[start + 1..self.at];
        self.at += 1;
        Some((name, (start as u32, self.at as u32)))
    }

    /// Any JSON value at nesting `depth` (of its enclosing container).
    fn value(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.at += 1;
                let mut names = Names::default();
                self.ws();
                if self.eat(b'}') {
                    return Some(());
                }
                loop {
                    self.ws();
                    let (name, _) = self.name()?;
                    names.insert(name)?;
                    self.ws();
                    self.expect(b':')?;
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    if self.eat(b'}') {
                        return Some(());
                    }
                    self.expect(b',')?;
                }
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.at += 1;
                self.ws();
                if self.eat(b']') {
                    return Some(());
                }
                loop {
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    if self.eat(b']') {
                        return Some(());
                    }
                    self.expect(b',')?;
                }
            }
            b'"' => self.string(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// A string: escapes checked (a `\u` surrogate must come in a pair), no control characters.
    fn string(&mut self) -> Option<()> {
        self.expect(b'"')?;
        loop {
            match self.plain_run()? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                _ => {
                    self.at += 1;
                    match self.peek()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
                        b'u' => {
                            self.at += 1;
                            let unit = self.hex4()?;
                            if (0xDC00..0xE000).contains(&unit) {
                                return None;
                            }
                            if (0xD800..0xDC00).contains(&unit) {
                                if self.bytes.get(self.at..self.at + 2)? != b"\\u" {
                                    return None;
                                }
                                self.at += 2;
                                if !(0xDC00..0xE000).contains(&self.hex4()?) {
                                    return None;
                                }
                            }
                        }
                        _ => return None,
                    }
                }
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.at..self.at + 4)?;
        if !digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        u32::from_str_radix(digits, 16).ok()
    }

    /// A number: JSON's grammar, and a value serde_json reads (an integer of at most 18 digits,
    /// or anything else that is a finite `f64`).
    fn number(&mut self) -> Option<()> {
        let start = self.at;
        self.eat(b'-');
        let digits = self.at;
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let short_integer = self.at - digits <= 18;
        let mut plain = true;
        if self.eat(b'.') {
            plain = false;
            self.digit()?;
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            plain = false;
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.digit()?;
            self.digits();
        }
        if plain && short_integer {
            return Some(());
        }
        let value: f64 = self.text[start..self.at].parse().ok()?;
        value.is_finite().then_some(())
    }

    fn digit(&mut self) -> Option<()> {
        self.peek()?.is_ascii_digit().then(|| self.at += 1)
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
    }

    /// A member's value as a `Value` (checked by [`Scanner::value`]; a string without escapes
    /// taken as it is).
    fn parsed(&mut self, depth: u32) -> Option<Value> {
        let start = self.at;
        self.value(depth)?;
        let text = &self.text[start..self.at];
        if let Some(plain) = plain_string(text) {
            return Some(Value::String(plain.to_owned()));
        }
        serde_json::from_str(text).ok()
    }

    /// The `params` object (spans into the message text).
    fn params(&mut self) -> Option<Scanned> {
        self.expect(b'{')?;
        let mut scanned = Scanned::default();
        let mut names = Names::default();
        self.ws();
        if self.eat(b'}') {
            return Some(scanned);
        }
        loop {
            self.ws();
            let (name, key) = self.name()?;
            names.insert(name)?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            let start = self.at;
            match name {
                "_meta" if self.peek() == Some(b'{') => scanned.meta = Meta::Object(self.meta()?),
                "_meta" => {
                    self.value(2)?;
                    scanned.meta = Meta::NotObject;
                }
                "requestState" => scanned.request_state = Some(self.parsed(2)?),
                "inputResponses" => scanned.input_responses = Some(self.parsed(2)?),
                _ => {
                    match name {
                        "name" => scanned.name = Some(self.parsed(2)?),
                        "uri" => scanned.uri = Some(self.parsed(2)?),
                        _ => self.value(2)?,
                    }
                    scanned.forwarded.push(Spliced {
                        key,
                        value: (start as u32, self.at as u32),
                    });
                }
            }
            self.ws();
            if self.eat(b'}') {
                return Some(scanned);
            }
            self.expect(b',')?;
        }
    }

    /// An object `params._meta`.
    fn meta(&mut self) -> Option<MetaSlots> {
        self.expect(b'{')?;
        let mut meta = MetaSlots::default();
        let mut names = Names::default();
        self.ws();
        if self.eat(b'}') {
            return Some(meta);
        }
        loop {
            self.ws();
            let (name, key) = self.name()?;
            names.insert(name)?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            let start = self.at;
            let slot = match name {
                meta_keys::PROTOCOL_VERSION => Some(&mut meta.protocol_version),
                meta_keys::CLIENT_CAPABILITIES => Some(&mut meta.client_capabilities),
                meta_keys::CLIENT_INFO => Some(&mut meta.client_info),
                meta_keys::LOG_LEVEL => Some(&mut meta.log_level),
                meta_keys::PROGRESS_TOKEN => Some(&mut meta.progress_token),
                _ => None,
            };
            match slot {
                Some(slot) => *slot = Some(self.parsed(3)?),
                None => {
                    self.value(3)?;
                    if !name.starts_with("io.modelcontextprotocol/") {
                        meta.forwarded.push(Spliced {
                            key,
                            value: (start as u32, self.at as u32),
                        });
                    }
                }
            }
            self.ws();
            if self.eat(b'}') {
                return Some(meta);
            }
            self.expect(b',')?;
        }
    }
}

/// The member names of one object so far (names without escapes: compared as they are).
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
    /// `None` for a duplicate, or past [`MAX_MEMBERS`].
    fn insert(&mut self, name: &'a str) -> Option<()> {
        if self.count == MAX_MEMBERS || self.seen[..self.count].contains(&name) {
            return None;
        }
        self.seen[self.count] = name;
        self.count += 1;
        Some(())
    }
}

/// [`Scanned`] with its spans made relative to the params text, which starts at `start`.
pub(super) fn relative(mut scanned: Scanned, start: u32) -> Scanned {
    for member in &mut scanned.forwarded {
        *member = member.shifted(start);
    }
    if let Meta::Object(meta) = &mut scanned.meta {
        for member in &mut meta.forwarded {
            *member = member.shifted(start);
        }
    }
    scanned
}
