//! `requestState` sealing: an AEAD-sealed handle to a paused legacy call, bound to the caller,
//! the method, a digest of the original params, the round and a short expiry.
//!
//! A `requestState` never carries the paused call itself (that stays in the proxy's memory and
//! in the [pause store](crate::store)), nor any secret: only [`Claims`] — the pause id and what
//! the retry must match. The client is an attacker as far as this string is concerned
//! (`mrtr.mdx`: "MUST treat `requestState` as input from an attacker"), so it is encrypted and
//! authenticated with XChaCha20-Poly1305 under a [`StateKey`] only the proxy knows.
//!
//! # Wire format (`mrs1`)
//!
//! ```text
//! "mrs1." + base64url_nopad( nonce[24] || XChaCha20-Poly1305(key, nonce, aad = "mrs1", plaintext) )
//!
//! plaintext (93 bytes for the three MRTR methods):
//!   [0]      method code: 1 tools/call, 2 resources/read, 3 prompts/get, 0 other (UTF-8 follows)
//!   [1..17]  pause id
//!   [17..49] principal digest
//!   [49..81] params digest (see [`params_digest`])
//!   [81..85] round, u32 big-endian
//!   [85..93] expires_at_ms, u64 big-endian (Unix epoch milliseconds)
//!   [93..]   the method name, only when the code is 0
//! ```
//!
//! # Keyring format (`mrs2`)
//!
//! A key with an id ([`crate::keyring`]: `--state-key-file` listing `ID KEY` lines) seals
//!
//! ```text
//! "mrs2." + ID + "." + base64url_nopad( nonce[24] || XChaCha20-Poly1305(key ID, nonce, aad = "mrs2." + ID, plaintext) )
//! ```
//!
//! with the same plaintext. The newest key of the keyring seals; a state opens with the key its
//! id names while the keyring lists it, else [`StateError::RetiredKey`]. A key without an id (a
//! single-key file, `MCP_MRTR_STATE_KEY`, the store's key) seals `mrs1`, and an `mrs1` state
//! opens with any listed key, so that listing the old key under an id keeps its states working.
//!
//! A state for `tools/call`, `resources/read` or `prompts/get` is exactly
//! [`TYPICAL_STATE_LEN`] (183) characters. Input longer than [`MAX_STATE_LEN`] bytes is refused
//! before any decoding. The nonce is random (192 bits, so random nonces are safe), hence sealing
//! the same claims twice gives two different strings.
//!
//! Single use is *not* enforced here — an authentic, unexpired state opens as often as it is
//! presented. Single use is the pause store's job ([`crate::store::PauseStore::claim`]).
//!
//! # Time
//!
//! All times are Unix epoch milliseconds (wall clock, see [`now_ms`]): states and pause records
//! outlive a proxy restart, so a monotonic clock would not do. A state is expired when
//! `now_ms >= expires_at_ms`.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, RwLock};

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine as _};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::rngs::OsRng;
use rand::RngCore;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::keyring::Keyring;
use crate::request::Principal;

/// The format tag: the prefix of every state, and the AEAD associated data.
pub const FORMAT_TAG: &str = "mrs1";
/// Longest `requestState` [`Sealer::open`] looks at; anything longer is [`StateError::Malformed`].
pub const MAX_STATE_LEN: usize = 4096;
/// Length of a state sealed for `tools/call`, `resources/read` or `prompts/get`.
pub const TYPICAL_STATE_LEN: usize = PREFIX.len() + (SEALED_FIXED_LEN * 4).div_ceil(3);

const PREFIX: &str = "mrs1.";
/// The prefix of a state sealed by a key with an id: `mrs2.ID.` (see [`crate::keyring`]).
const KEYRING_PREFIX: &str = "mrs2.";
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;
/// Plaintext without the optional method name.
const PLAIN_FIXED_LEN: usize = 1 + 16 + 32 + 32 + 4 + 8;
/// nonce + ciphertext of a plaintext without a method name.
const SEALED_FIXED_LEN: usize = NONCE_LEN + PLAIN_FIXED_LEN + TAG_LEN;

/// Method codes; 0 means "the method name follows".
const KNOWN_METHODS: [(u8, &str); 3] =
    [(1, "tools/call"), (2, "resources/read"), (3, "prompts/get")];

/// The current wall-clock time in Unix epoch milliseconds: the time base of
/// [`Claims::expires_at_ms`] and of the pause store's deadlines. A clock before 1970 gives 0.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// Hex helpers (no crate needed for 16/32-byte values)

pub(crate) fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

fn hex_digit(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

/// Decodes exactly `N` bytes from `2 * N` hex digits (either case).
pub(crate) fn hex_decode<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (slot, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *slot = (hex_digit(pair[0])? << 4) | hex_digit(pair[1])?;
    }
    Some(out)
}

/// Constant-time equality of two byte strings of equal length.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

// ---------------------------------------------------------------------------------------------
// StateKey

/// The 32-byte secret that seals and opens `requestState`s.
///
/// Sources, in the proxy's order of preference: `--state-key-file`, the environment variable
/// `MCP_MRTR_STATE_KEY` (both parsed with [`StateKey::from_text`]), else a key generated once and
/// kept in the pause store ([`crate::store::PauseStore::state_key`]).
///
/// `Debug` never prints the key; the bytes are overwritten on drop (best effort: without a
/// dedicated crate the compiler is only discouraged, not forbidden, from eliding the write).
pub struct StateKey([u8; 32]);

impl StateKey {
    /// A fresh key from the operating system's random number generator.
    pub fn generate() -> StateKey {
        let mut bytes = [0u8; 32];
        OsRng.fill_bytes(&mut bytes);
        StateKey(bytes)
    }

    /// A key from raw bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> StateKey {
        StateKey(bytes)
    }

    /// Parses a key as written in a key file or in `MCP_MRTR_STATE_KEY`: surrounding whitespace
    /// is ignored, then either 64 hex digits (either case), or the base64 or base64url encoding
    /// (padding optional) of exactly 32 bytes. Errors never echo the text.
    pub fn from_text(text: &str) -> Result<StateKey, KeyError> {
        const INDIFFERENT: GeneralPurposeConfig =
            GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
        const STANDARD_ANY: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, INDIFFERENT);
        const URL_SAFE_ANY: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, INDIFFERENT);

        let text = text.trim();
        if text.is_empty() {
            return Err(KeyError::Empty);
        }
        if let Some(bytes) = hex_decode::<32>(text) {
            return Ok(StateKey(bytes));
        }
        let decoded = STANDARD_ANY
            .decode(text)
            .or_else(|_| URL_SAFE_ANY.decode(text));
        let all_hex = text.bytes().all(|b| hex_digit(b).is_some());
        match decoded {
            Ok(bytes) if bytes.len() == 32 && !all_hex => {
                let mut key = [0u8; 32];
                key.copy_from_slice(&bytes);
                Ok(StateKey(key))
            }
            // Hex digits of the wrong count: report it as hex, not as odd base64.
            _ if all_hex => Err(KeyError::WrongLength {
                bytes: text.len() / 2,
            }),
            Ok(bytes) => Err(KeyError::WrongLength { bytes: bytes.len() }),
            Err(_) => Err(KeyError::Invalid),
        }
    }

    /// The key as 64 lowercase hex digits (what [`from_text`](Self::from_text) reads back).
    pub fn to_text(&self) -> String {
        hex_encode(&self.0)
    }

    fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl Clone for StateKey {
    fn clone(&self) -> Self {
        StateKey(self.0)
    }
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateKey(<redacted>)")
    }
}

impl Drop for StateKey {
    fn drop(&mut self) {
        self.0 = [0u8; 32];
        std::hint::black_box(&mut self.0);
    }
}

/// Why a key text was refused. Never contains the text itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the state key is empty")]
    Empty,
    #[error("the state key decodes to {bytes} bytes; exactly 32 are required (64 hex digits or 43/44 base64 characters)")]
    WrongLength { bytes: usize },
    #[error("the state key is neither hex nor base64/base64url; expected 64 hex digits or the base64 encoding of 32 bytes")]
    Invalid,
}

// ---------------------------------------------------------------------------------------------
// PauseId

/// The random 128-bit identifier of one paused round: the key of its pause-store record, and
/// the handle a sealed state carries. Shown as 32 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PauseId([u8; 16]);

impl PauseId {
    /// A fresh id from the operating system's random number generator.
    pub fn random() -> PauseId {
        let mut bytes = [0u8; 16];
        OsRng.fill_bytes(&mut bytes);
        PauseId(bytes)
    }

    pub fn from_bytes(bytes: [u8; 16]) -> PauseId {
        PauseId(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Display for PauseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex_encode(&self.0))
    }
}

impl fmt::Debug for PauseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PauseId({self})")
    }
}

/// A pause id text that is not 32 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a pause id is 32 hex digits")]
pub struct InvalidPauseId;

impl FromStr for PauseId {
    type Err = InvalidPauseId;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        hex_decode::<16>(text).map(PauseId).ok_or(InvalidPauseId)
    }
}

impl serde::Serialize for PauseId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for PauseId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

// ---------------------------------------------------------------------------------------------
// Claims and the params digest

/// What a `requestState` says, once opened and authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// The paused round this state resumes (the pause store's key).
    pub pause_id: PauseId,
    /// Who may present it.
    pub principal: Principal,
    /// The method of the original request (`tools/call`, `resources/read`, `prompts/get`).
    /// Keep it short: it is sealed into the state when it is not one of those three.
    pub method: String,
    /// [`params_digest`] of the original request's params.
    pub params_digest: [u8; 32],
    /// The MRTR round (1 for the first `input_required`).
    pub round: u32,
    /// Unix epoch milliseconds; the state is expired from this instant on.
    pub expires_at_ms: u64,
}

/// Top-level params keys that do not take part in [`params_digest`]: they differ between the
/// original request and its retries.
pub const DIGEST_EXCLUDED_KEYS: [&str; 3] = ["_meta", "inputResponses", "requestState"];

/// SHA-256 of the request params, so that a retry can be matched to the request it retries.
///
/// The digest covers a canonical JSON encoding of `params` **without** its top-level `_meta`,
/// `inputResponses` and `requestState` (the client re-sends `_meta`, and the other two are what
/// a retry adds), so a retry's digest equals the original's. Everything else counts: a changed
/// `name`, `uri`, `arguments` (at any depth) or any other key changes the digest.
///
/// Canonical encoding: object keys sorted by their UTF-8 bytes at every level, no whitespace,
/// strings escaped as `serde_json` does, numbers as `serde_json` prints them (so `1` and `1.0`
/// differ, as their JSON texts do). Only the top level is filtered: a `_meta` inside `arguments`
/// belongs to the arguments. The hash input starts with a domain-separation prefix.
pub fn params_digest(params: &Value) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"mcp-mrtr-proxy params v1\0");
    match params {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map
                .iter()
                .filter(|(key, _)| !DIGEST_EXCLUDED_KEYS.contains(&key.as_str()))
                .collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            canonical_object(&mut hasher, entries);
        }
        other => canonical(&mut hasher, other),
    }
    hasher.finalize().into()
}

fn canonical(hasher: &mut Sha256, value: &Value) {
    match value {
        Value::Null => hasher.update(b"null"),
        Value::Bool(true) => hasher.update(b"true"),
        Value::Bool(false) => hasher.update(b"false"),
        Value::Number(number) => hasher.update(number.to_string().as_bytes()),
        Value::String(text) => canonical_string(hasher, text),
        Value::Array(items) => {
            hasher.update(b"[");
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    hasher.update(b",");
                }
                canonical(hasher, item);
            }
            hasher.update(b"]");
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            canonical_object(hasher, entries);
        }
    }
}

/// `entries` must be sorted. (`serde_json::Map` iterates sorted unless some crate in the build
/// enables serde_json's `preserve_order` feature; the callers sort regardless.)
fn canonical_object(hasher: &mut Sha256, entries: Vec<(&String, &Value)>) {
    hasher.update(b"{");
    for (index, (key, item)) in entries.into_iter().enumerate() {
        if index > 0 {
            hasher.update(b",");
        }
        canonical_string(hasher, key);
        hasher.update(b":");
        canonical(hasher, item);
    }
    hasher.update(b"}");
}

fn canonical_string(hasher: &mut Sha256, text: &str) {
    // Serialising a &str cannot fail; fall back to a length-prefixed raw form regardless.
    match serde_json::to_string(text) {
        Ok(escaped) => hasher.update(escaped.as_bytes()),
        Err(_) => {
            hasher.update((text.len() as u64).to_be_bytes());
            hasher.update(text.as_bytes());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Errors

/// Why a `requestState` was refused. Each message is the complete text the client gets in the
/// JSON-RPC error (nothing is prefixed to it) and never reveals what the state contains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not a state of this proxy's format: wrong prefix, bad base64, wrong length, too long.
    #[error(
        "invalid requestState: not a state issued by this server; send it back exactly as received"
    )]
    Malformed,
    /// Authentication failed: the state was altered, or sealed under another key.
    #[error("invalid requestState: integrity check failed (altered, or issued by another server or under another key)")]
    Forged,
    /// The state's expiry has passed.
    #[error("requestState has expired; send the original request again without inputResponses and requestState")]
    Expired,
    /// Sealed with a key the keyring no longer lists (rotated out).
    #[error("requestState was sealed with a retired key; send the original request again without inputResponses and requestState")]
    RetiredKey,
    /// Presented by another caller than the one it was issued to.
    #[error("invalid requestState: it was issued to a different caller")]
    WrongPrincipal,
    /// Presented on another method than the one it was issued for.
    #[error("invalid requestState: it was issued for a different method")]
    WrongMethod,
    /// Presented with other params (`name`, `uri`, `arguments`, ...) than the original request's.
    #[error("invalid requestState: it does not match this request's params; a retry must repeat the original params (name, uri, arguments)")]
    WrongParams,
}

impl StateError {
    /// A stable snake_case label for metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            StateError::Malformed => "malformed",
            StateError::Forged => "forged",
            StateError::Expired => "expired",
            StateError::RetiredKey => "retired_key",
            StateError::WrongPrincipal => "wrong_principal",
            StateError::WrongMethod => "wrong_method",
            StateError::WrongParams => "wrong_params",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Sealer

/// Seals [`Claims`] into `requestState` strings and opens them again, under a [`Keyring`]: the
/// newest key seals, every listed key opens. Cheap to share (`&self` everywhere); clones share
/// one keyring, which [`replace`](Self::replace) swaps (SIGHUP) for every clone at once.
#[derive(Clone)]
pub struct Sealer {
    ring: Arc<RwLock<Arc<SealingRing>>>,
}

/// The keys in use, newest first.
struct SealingRing {
    keys: Vec<SealingKey>,
}

struct SealingKey {
    /// `None`: the key of a single-key file or of the store, sealing the `mrs1` format.
    id: Option<String>,
    aead: XChaCha20Poly1305,
    /// Seals requests passed between instances ([`crate::cluster`]): a key derived from the
    /// state key, so that a forwarded request can never be taken for a `requestState`.
    forward: XChaCha20Poly1305,
}

impl SealingRing {
    fn of(keyring: &Keyring) -> SealingRing {
        SealingRing {
            keys: keyring
                .keys()
                .iter()
                .rev()
                .map(|(id, key)| SealingKey::new(id.clone(), key))
                .collect(),
        }
    }
}

impl SealingKey {
    fn new(id: Option<String>, key: &StateKey) -> SealingKey {
        let mut forward = Sha256::new();
        forward.update(b"mcp-mrtr-proxy forward v1\0");
        forward.update(key.bytes());
        let forward: [u8; 32] = forward.finalize().into();
        SealingKey {
            id,
            aead: XChaCha20Poly1305::new(key.bytes().into()),
            forward: XChaCha20Poly1305::new((&forward).into()),
        }
    }
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sealer { .. }")
    }
}

impl Sealer {
    /// A sealer of one key without an id (the `mrs1` format).
    pub fn new(key: &StateKey) -> Sealer {
        Sealer::with_keyring(&Keyring::single(key.clone()))
    }

    /// A sealer of `keyring` (its last key seals).
    pub fn with_keyring(keyring: &Keyring) -> Sealer {
        Sealer {
            ring: Arc::new(RwLock::new(Arc::new(SealingRing::of(keyring)))),
        }
    }

    /// Swaps the keys (for every clone of this sealer): states sealed with a key `keyring` still
    /// lists keep opening; those of a key it dropped get [`StateError::RetiredKey`].
    pub fn replace(&self, keyring: &Keyring) {
        let ring = Arc::new(SealingRing::of(keyring));
        *self
            .ring
            .write()
            .unwrap_or_else(|poison| poison.into_inner()) = ring;
    }

    fn ring(&self) -> Arc<SealingRing> {
        Arc::clone(
            &self
                .ring
                .read()
                .unwrap_or_else(|poison| poison.into_inner()),
        )
    }

    /// Seals a request passed to another instance: nonce ‖ XChaCha20-Poly1305(plaintext), under
    /// a key derived from the state key (every instance shares it).
    pub fn seal_forward(&self, plaintext: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        OsRng.fill_bytes(&mut nonce);
        let ciphertext = self.ring().keys[0]
            .forward
            .encrypt(XNonce::from_slice(&nonce), plaintext)
            .expect("XChaCha20-Poly1305 only fails on messages over 256 GiB");
        let mut sealed = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        sealed
    }

    /// Opens what [`seal_forward`](Self::seal_forward) sealed; `None` when it is not authentic.
    pub fn open_forward(&self, sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        self.ring().keys.iter().find_map(|key| {
            key.forward
                .decrypt(XNonce::from_slice(nonce), ciphertext)
                .ok()
        })
    }

    /// Seals `claims`: `"mrs1." + base64url_nopad(nonce || ciphertext)`, see the module docs.
    /// [`TYPICAL_STATE_LEN`] characters for the three MRTR methods; another method adds its name
    /// (a method over ~2,900 bytes would give a state [`open`](Self::open) refuses as too long).
    pub fn seal(&self, claims: &Claims) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        OsRng.fill_bytes(&mut nonce);
        self.seal_with_nonce(claims, nonce)
    }

    /// [`seal`](Self::seal) with a given nonce, so that a fuzz target can reproduce a state.
    /// Never for real states: a nonce must not be used twice under one key.
    pub(crate) fn seal_with_nonce(&self, claims: &Claims, nonce: [u8; NONCE_LEN]) -> String {
        let plaintext = encode_claims(claims);
        let ring = self.ring();
        let key = &ring.keys[0];
        // `mrs1.` for a key without an id, `mrs2.ID.` otherwise (the prefix, without its final
        // dot, is the associated data: the id cannot be swapped).
        let prefix = match &key.id {
            None => PREFIX.to_owned(),
            Some(id) => format!("{KEYRING_PREFIX}{id}."),
        };
        let aad = match &key.id {
            None => FORMAT_TAG.to_owned(),
            Some(_) => prefix[..prefix.len() - 1].to_owned(),
        };
        let ciphertext = key
            .aead
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: &plaintext,
                    aad: aad.as_bytes(),
                },
            )
            .expect("XChaCha20-Poly1305 only fails on messages over 256 GiB");
        let mut sealed = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        let mut state = String::with_capacity(prefix.len() + (sealed.len() * 4).div_ceil(3));
        state.push_str(&prefix);
        URL_SAFE_NO_PAD.encode_string(&sealed, &mut state);
        state
    }

    /// Opens and authenticates `state`, then checks its expiry against `now_ms`
    /// (expired when `now_ms >= expires_at_ms`). Bindings are not checked: see
    /// [`open_for`](Self::open_for). Never panics, whatever the input.
    pub fn open(&self, state: &str, now_ms: u64) -> Result<Claims, StateError> {
        let claims = self.unseal(state)?;
        if now_ms >= claims.expires_at_ms {
            return Err(StateError::Expired);
        }
        Ok(claims)
    }

    /// [`open`](Self::open), plus the bindings of the retry: the caller, the method and the
    /// [`params_digest`] of the retry's params must be those the state was sealed for.
    ///
    /// Checks in this order: format ([`Malformed`](StateError::Malformed)), authenticity
    /// ([`Forged`](StateError::Forged)), principal, method, params, and expiry last — a
    /// mismatching retry is told what is wrong with it even when the state has also expired.
    pub fn open_for(
        &self,
        state: &str,
        now_ms: u64,
        principal: &Principal,
        method: &str,
        params_digest: &[u8; 32],
    ) -> Result<Claims, StateError> {
        let claims = self.unseal(state)?;
        if !ct_eq(&claims.principal.0, &principal.0) {
            return Err(StateError::WrongPrincipal);
        }
        if claims.method != method {
            return Err(StateError::WrongMethod);
        }
        if !ct_eq(&claims.params_digest, params_digest) {
            return Err(StateError::WrongParams);
        }
        if now_ms >= claims.expires_at_ms {
            return Err(StateError::Expired);
        }
        Ok(claims)
    }

    /// Format and authenticity, no time or binding checks.
    fn unseal(&self, state: &str) -> Result<Claims, StateError> {
        if state.len() > MAX_STATE_LEN {
            return Err(StateError::Malformed);
        }
        // `mrs1.`: sealed by a key without an id (any listed key may be it); `mrs2.ID.`: by the
        // key `ID`, which must still be listed.
        let (encoded, id) = match state.strip_prefix(PREFIX) {
            Some(encoded) => (encoded, None),
            None => {
                let rest = state
                    .strip_prefix(KEYRING_PREFIX)
                    .ok_or(StateError::Malformed)?;
                let (id, encoded) = rest.split_once('.').ok_or(StateError::Malformed)?;
                if !crate::keyring::valid_key_id(id) {
                    return Err(StateError::Malformed);
                }
                (encoded, Some(id))
            }
        };
        // Strict: no padding, no whitespace, canonical trailing bits.
        let sealed = URL_SAFE_NO_PAD
            .decode(encoded)
            .map_err(|_| StateError::Malformed)?;
        if sealed.len() < SEALED_FIXED_LEN {
            return Err(StateError::Malformed);
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        let ring = self.ring();
        let open = |key: &SealingKey, aad: &[u8]| {
            key.aead
                .decrypt(
                    XNonce::from_slice(nonce),
                    Payload {
                        msg: ciphertext,
                        aad,
                    },
                )
                .ok()
        };
        let plaintext = match id {
            None => ring
                .keys
                .iter()
                .find_map(|key| open(key, FORMAT_TAG.as_bytes())),
            Some(id) => {
                let key = ring
                    .keys
                    .iter()
                    .find(|key| key.id.as_deref() == Some(id))
                    .ok_or(StateError::RetiredKey)?;
                let aad = &state[..KEYRING_PREFIX.len() + id.len()];
                open(key, aad.as_bytes())
            }
        }
        .ok_or(StateError::Forged)?;
        decode_claims(&plaintext).ok_or(StateError::Malformed)
    }
}

fn encode_claims(claims: &Claims) -> Vec<u8> {
    let code = KNOWN_METHODS
        .iter()
        .find(|(_, name)| *name == claims.method)
        .map_or(0, |(code, _)| *code);
    let mut out = Vec::with_capacity(PLAIN_FIXED_LEN + claims.method.len());
    out.push(code);
    out.extend_from_slice(claims.pause_id.as_bytes());
    out.extend_from_slice(&claims.principal.0);
    out.extend_from_slice(&claims.params_digest);
    out.extend_from_slice(&claims.round.to_be_bytes());
    out.extend_from_slice(&claims.expires_at_ms.to_be_bytes());
    if code == 0 {
        out.extend_from_slice(claims.method.as_bytes());
    }
    out
}

/// `None` for an authentic plaintext this version cannot read (unknown method code, a name
/// after a known code, bad UTF-8, too short).
fn decode_claims(plain: &[u8]) -> Option<Claims> {
    if plain.len() < PLAIN_FIXED_LEN {
        return None;
    }
    let (fixed, rest) = plain.split_at(PLAIN_FIXED_LEN);
    let method = match fixed[0] {
        0 => std::str::from_utf8(rest).ok()?.to_owned(),
        code => {
            let (_, name) = KNOWN_METHODS.iter().find(|(known, _)| *known == code)?;
            if !rest.is_empty() {
                return None;
            }
            (*name).to_owned()
        }
    };
    Some(Claims {
        pause_id: PauseId(fixed[1..17].try_into().ok()?),
        principal: Principal(fixed[17..49].try_into().ok()?),
        params_digest: fixed[49..81].try_into().ok()?,
        round: u32::from_be_bytes(fixed[81..85].try_into().ok()?),
        expires_at_ms: u64::from_be_bytes(fixed[85..93].try_into().ok()?),
        method,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};
    use proptest::prelude::*;
    use serde_json::json;

    const NOW: u64 = 1_800_000_000_000;

    fn key(byte: u8) -> StateKey {
        StateKey::from_bytes([byte; 32])
    }

    fn claims() -> Claims {
        Claims {
            pause_id: PauseId::from_bytes([0xab; 16]),
            principal: Principal::from_credential(b"Bearer alice"),
            method: "tools/call".to_owned(),
            params_digest: params_digest(&json!({"name": "deploy", "arguments": {"env": "prod"}})),
            round: 1,
            expires_at_ms: NOW + 60_000,
        }
    }

    fn accepted(result: &Result<Claims, StateError>) -> bool {
        result.is_ok()
    }

    #[test]
    fn seal_open_round_trip() {
        let sealer = Sealer::new(&key(1));
        let claims = claims();
        let state = sealer.seal(&claims);
        assert!(state.starts_with("mrs1."), "{state}");
        assert_eq!(state.len(), TYPICAL_STATE_LEN);
        assert_eq!(state.len(), 183);
        assert_eq!(sealer.open(&state, NOW), Ok(claims.clone()));
        assert_eq!(
            sealer.open_for(
                &state,
                NOW,
                &claims.principal,
                "tools/call",
                &claims.params_digest
            ),
            Ok(claims)
        );
    }

    #[test]
    fn all_known_methods_and_other_methods_round_trip() {
        let sealer = Sealer::new(&key(1));
        for method in [
            "tools/call",
            "resources/read",
            "prompts/get",
            "",
            "x/custom",
            "émoji/🦀",
        ] {
            let claims = Claims {
                method: method.to_owned(),
                ..claims()
            };
            let state = sealer.seal(&claims);
            assert_eq!(sealer.open(&state, NOW).as_ref(), Ok(&claims), "{method}");
        }
    }

    #[test]
    fn state_is_encrypted_and_nonce_is_fresh() {
        let sealer = Sealer::new(&key(1));
        let claims = claims();
        let a = sealer.seal(&claims);
        let b = sealer.seal(&claims);
        assert_ne!(
            a, b,
            "two seals of the same claims must differ (random nonce)"
        );
        let raw = URL_SAFE_NO_PAD.decode(&a[5..]).unwrap();
        let contains = |needle: &[u8]| raw.windows(needle.len()).any(|w| w == needle);
        assert!(!contains(claims.pause_id.as_bytes()));
        assert!(!contains(&claims.principal.0[..8]));
        assert!(!contains(&claims.params_digest[..8]));
    }

    #[test]
    fn every_bit_flip_of_the_payload_is_forged_or_malformed() {
        let sealer = Sealer::new(&key(1));
        let state = sealer.seal(&claims());
        let raw = URL_SAFE_NO_PAD.decode(&state[5..]).unwrap();
        for byte in 0..raw.len() {
            for bit in 0..8 {
                let mut flipped = raw.clone();
                flipped[byte] ^= 1 << bit;
                let tampered = format!("mrs1.{}", URL_SAFE_NO_PAD.encode(&flipped));
                assert_eq!(
                    sealer.open(&tampered, NOW),
                    Err(StateError::Forged),
                    "byte {byte} bit {bit}"
                );
            }
        }
    }

    #[test]
    fn every_bit_flip_of_the_text_is_rejected() {
        let sealer = Sealer::new(&key(1));
        let state = sealer.seal(&claims());
        let mut checked = 0;
        for index in 0..state.len() {
            for bit in 0..8 {
                let mut bytes = state.clone().into_bytes();
                bytes[index] ^= 1 << bit;
                let Ok(tampered) = String::from_utf8(bytes) else {
                    continue;
                };
                let result = sealer.open(&tampered, NOW);
                assert!(
                    matches!(result, Err(StateError::Forged | StateError::Malformed)),
                    "index {index} bit {bit}: {result:?}"
                );
                checked += 1;
            }
        }
        assert!(checked > state.len() * 6);
    }

    #[test]
    fn truncations_and_appended_garbage_are_rejected() {
        let sealer = Sealer::new(&key(1));
        for method in ["tools/call", "x/a-longer-custom-method"] {
            let state = sealer.seal(&Claims {
                method: method.to_owned(),
                ..claims()
            });
            for len in 0..state.len() {
                let result = sealer.open(&state[..len], NOW);
                assert!(
                    matches!(result, Err(StateError::Forged | StateError::Malformed)),
                    "{method} truncated to {len}: {result:?}"
                );
            }
            for garbage in [
                "A", "AA", "AAA", "AAAA", "=", "==", " ", "\n", ".", "mrs1.", "é",
            ] {
                let result = sealer.open(&format!("{state}{garbage}"), NOW);
                assert!(
                    matches!(result, Err(StateError::Forged | StateError::Malformed)),
                    "{method} + {garbage:?}: {result:?}"
                );
                let result = sealer.open(&format!("{garbage}{state}"), NOW);
                assert_eq!(result, Err(StateError::Malformed), "{garbage:?} + {method}");
            }
            // Re-encodings are not accepted either: padded, or the standard alphabet.
            let raw = URL_SAFE_NO_PAD.decode(&state[5..]).unwrap();
            for other in [
                URL_SAFE.encode(&raw),
                STANDARD.encode(&raw),
                STANDARD_NO_PAD.encode(&raw),
            ] {
                if other != state[5..] {
                    assert_eq!(
                        sealer.open(&format!("mrs1.{other}"), NOW),
                        Err(StateError::Malformed)
                    );
                }
            }
        }
    }

    #[test]
    fn another_key_is_forged() {
        let state = Sealer::new(&key(1)).seal(&claims());
        let other = Sealer::new(&key(2));
        assert_eq!(other.open(&state, NOW), Err(StateError::Forged));
        let claims = claims();
        assert_eq!(
            other.open_for(
                &state,
                NOW,
                &claims.principal,
                &claims.method,
                &claims.params_digest
            ),
            Err(StateError::Forged)
        );
        assert_eq!(
            Sealer::new(&StateKey::generate()).open(&state, NOW),
            Err(StateError::Forged)
        );
    }

    #[test]
    fn associated_data_is_bound() {
        // Same key, same plaintext, but sealed with another tag as associated data: Forged.
        let key = key(1);
        let aead = XChaCha20Poly1305::new(key.bytes().into());
        let nonce = [7u8; NONCE_LEN];
        let plaintext = encode_claims(&claims());
        for aad in [&b"mrs0"[..], b"", b"mrs1 "] {
            let ciphertext = aead
                .encrypt(
                    XNonce::from_slice(&nonce),
                    Payload {
                        msg: &plaintext,
                        aad,
                    },
                )
                .unwrap();
            let state = format!(
                "mrs1.{}",
                URL_SAFE_NO_PAD.encode([&nonce[..], &ciphertext].concat())
            );
            assert_eq!(Sealer::new(&key).open(&state, NOW), Err(StateError::Forged));
        }
        // And the control: with the right tag it opens.
        let ciphertext = aead
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: &plaintext,
                    aad: b"mrs1",
                },
            )
            .unwrap();
        let state = format!(
            "mrs1.{}",
            URL_SAFE_NO_PAD.encode([&nonce[..], &ciphertext].concat())
        );
        assert_eq!(Sealer::new(&key).open(&state, NOW), Ok(claims()));
    }

    #[test]
    fn authentic_but_unreadable_plaintext_is_malformed() {
        let key = key(1);
        let aead = XChaCha20Poly1305::new(key.bytes().into());
        let good = encode_claims(&claims());
        let mut unknown_code = good.clone();
        unknown_code[0] = 9;
        let mut name_after_code = good.clone();
        name_after_code.extend_from_slice(b"x");
        let mut bad_utf8 = good.clone();
        bad_utf8[0] = 0;
        bad_utf8.extend_from_slice(&[0xff, 0xfe]);
        let short = good[..PLAIN_FIXED_LEN - 1].to_vec();
        for plaintext in [unknown_code, name_after_code, bad_utf8, short] {
            let nonce = [3u8; NONCE_LEN];
            let ciphertext = aead
                .encrypt(
                    XNonce::from_slice(&nonce),
                    Payload {
                        msg: &plaintext,
                        aad: b"mrs1",
                    },
                )
                .unwrap();
            let state = format!(
                "mrs1.{}",
                URL_SAFE_NO_PAD.encode([&nonce[..], &ciphertext].concat())
            );
            assert_eq!(
                Sealer::new(&key).open(&state, NOW),
                Err(StateError::Malformed)
            );
        }
    }

    #[test]
    fn expiry_boundary() {
        let sealer = Sealer::new(&key(1));
        let claims = claims();
        let state = sealer.seal(&claims);
        let at = claims.expires_at_ms;
        assert!(accepted(&sealer.open(&state, at - 1)));
        assert_eq!(sealer.open(&state, at), Err(StateError::Expired));
        assert_eq!(sealer.open(&state, at + 1), Err(StateError::Expired));
        assert_eq!(sealer.open(&state, u64::MAX), Err(StateError::Expired));
        let bind = |now| {
            sealer.open_for(
                &state,
                now,
                &claims.principal,
                &claims.method,
                &claims.params_digest,
            )
        };
        assert!(accepted(&bind(at - 1)));
        assert_eq!(bind(at), Err(StateError::Expired));
        // An expires_at_ms of 0 is always expired.
        let zero = sealer.seal(&Claims {
            expires_at_ms: 0,
            ..claims.clone()
        });
        assert_eq!(sealer.open(&zero, 0), Err(StateError::Expired));
    }

    #[test]
    fn each_binding_mismatch_has_its_error() {
        let sealer = Sealer::new(&key(1));
        let claims = claims();
        let state = sealer.seal(&claims);
        let bob = Principal::from_credential(b"Bearer bob");
        let other_digest = params_digest(&json!({"name": "deploy", "arguments": {"env": "dev"}}));
        assert_eq!(
            sealer.open_for(&state, NOW, &bob, "tools/call", &claims.params_digest),
            Err(StateError::WrongPrincipal)
        );
        assert_eq!(
            sealer.open_for(
                &state,
                NOW,
                &Principal::anonymous(),
                "tools/call",
                &claims.params_digest
            ),
            Err(StateError::WrongPrincipal)
        );
        assert_eq!(
            sealer.open_for(
                &state,
                NOW,
                &claims.principal,
                "prompts/get",
                &claims.params_digest
            ),
            Err(StateError::WrongMethod)
        );
        assert_eq!(
            sealer.open_for(&state, NOW, &claims.principal, "tools/call", &other_digest),
            Err(StateError::WrongParams)
        );
        // Order: principal before method before params before expiry.
        assert_eq!(
            sealer.open_for(&state, u64::MAX, &bob, "prompts/get", &other_digest),
            Err(StateError::WrongPrincipal)
        );
        assert_eq!(
            sealer.open_for(
                &state,
                u64::MAX,
                &claims.principal,
                "prompts/get",
                &other_digest
            ),
            Err(StateError::WrongMethod)
        );
        assert_eq!(
            sealer.open_for(
                &state,
                u64::MAX,
                &claims.principal,
                "tools/call",
                &other_digest
            ),
            Err(StateError::WrongParams)
        );
        // A forged state is Forged whatever the bindings.
        assert_eq!(
            Sealer::new(&key(9)).open_for(&state, NOW, &bob, "x", &other_digest),
            Err(StateError::Forged)
        );
    }

    #[test]
    fn reasons_and_messages() {
        let all = [
            (StateError::Malformed, "malformed"),
            (StateError::Forged, "forged"),
            (StateError::Expired, "expired"),
            (StateError::WrongPrincipal, "wrong_principal"),
            (StateError::WrongMethod, "wrong_method"),
            (StateError::WrongParams, "wrong_params"),
        ];
        let mut messages = std::collections::BTreeSet::new();
        for (error, reason) in all {
            assert_eq!(error.reason(), reason);
            let message = error.to_string();
            assert!(message.contains("requestState"), "{message}");
            assert!(messages.insert(message), "messages must differ");
        }
    }

    #[test]
    fn params_digest_ignores_retry_fields() {
        let original = json!({
            "name": "deploy",
            "arguments": {"env": "prod", "replicas": 3},
            "_meta": {"progressToken": 1, "io.modelcontextprotocol/protocolVersion": "2026-07-28"}
        });
        let retry = json!({
            "_meta": {"progressToken": "other", "io.modelcontextprotocol/protocolVersion": "2026-07-28"},
            "name": "deploy",
            "arguments": {"env": "prod", "replicas": 3},
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
            // mcp-lint: allow(unsigned-request-state) a client retry's echo; the digest ignores it
            "requestState": "mrs1.whatever"
        });
        let bare = json!({"name": "deploy", "arguments": {"env": "prod", "replicas": 3}});
        assert_eq!(params_digest(&original), params_digest(&retry));
        assert_eq!(params_digest(&original), params_digest(&bare));
    }

    #[test]
    fn params_digest_is_key_order_independent() {
        let a: Value = serde_json::from_str(
            r#"{"name":"t","arguments":{"b":[{"y":1,"x":2}],"a":{"d":null,"c":"s"}}}"#,
        )
        .unwrap();
        let b: Value = serde_json::from_str(
            r#"{"arguments":{"a":{"c":"s","d":null},"b":[{"x":2,"y":1}]},"name":"t"}"#,
        )
        .unwrap();
        assert_eq!(params_digest(&a), params_digest(&b));
    }

    #[test]
    fn params_digest_changes_with_what_matters() {
        let base = json!({"name": "deploy", "arguments": {"env": "prod", "tags": ["a", "b"]}});
        let variants = [
            json!({"name": "deploy2", "arguments": {"env": "prod", "tags": ["a", "b"]}}),
            json!({"name": "deploy", "arguments": {"env": "dev", "tags": ["a", "b"]}}),
            json!({"name": "deploy", "arguments": {"env": "prod", "tags": ["b", "a"]}}),
            json!({"name": "deploy", "arguments": {"env": "prod", "tags": ["a"]}}),
            json!({"name": "deploy", "arguments": {"env": "prod", "tags": ["a", "b"], "x": 1}}),
            json!({"name": "deploy", "arguments": {"env": "prod", "tags": ["a", "b"], "_meta": {}}}),
            json!({"name": "deploy", "arguments": {"env": "prod", "tags": "a,b"}}),
            json!({"name": "deploy", "arguments": {}}),
            json!({"name": "deploy"}),
            json!({"name": "deploy", "arguments": {"env": "prod", "tags": ["a", "b"]}, "task": {}}),
            json!({"uri": "deploy"}),
            json!(null),
            json!({}),
        ];
        let base_digest = params_digest(&base);
        let mut seen = std::collections::BTreeSet::from([base_digest]);
        for variant in &variants {
            assert!(
                seen.insert(params_digest(variant)),
                "collision for {variant}"
            );
        }
        // Value types and numeric forms are distinguished.
        assert_ne!(
            params_digest(&json!({"a": 1})),
            params_digest(&json!({"a": "1"}))
        );
        assert_ne!(
            params_digest(&json!({"a": 1})),
            params_digest(&json!({"a": 1.5}))
        );
        assert_ne!(
            params_digest(&json!({"a": true})),
            params_digest(&json!({"a": "true"}))
        );
        // Structure cannot be faked with punctuation inside strings.
        assert_ne!(
            params_digest(&json!({"a": "b\",\"c\":\"d"})),
            params_digest(&json!({"a": "b", "c": "d"}))
        );
    }

    #[test]
    fn from_text_accepts_hex_and_base64_of_32_bytes() {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(250));
        let expected = hex_encode(&bytes);
        let encodings = [
            expected.clone(),
            expected.to_uppercase(),
            format!("  {expected}\n"),
            STANDARD.encode(bytes),
            STANDARD_NO_PAD.encode(bytes),
            URL_SAFE.encode(bytes),
            URL_SAFE_NO_PAD.encode(bytes),
            format!("\t{}\r\n", STANDARD.encode(bytes)),
        ];
        assert!(
            STANDARD.encode(bytes).contains(['+', '/'])
                || URL_SAFE.encode(bytes).contains(['-', '_'])
        );
        for text in encodings {
            let key = StateKey::from_text(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(key.to_text(), expected, "{text:?}");
        }
        // to_text round-trips through from_text.
        let generated = StateKey::generate();
        assert_eq!(
            StateKey::from_text(&generated.to_text()).unwrap().to_text(),
            generated.to_text()
        );
        assert_eq!(generated.to_text().len(), 64);
    }

    #[test]
    fn from_text_rejects_everything_else() {
        assert_eq!(StateKey::from_text("").unwrap_err(), KeyError::Empty);
        assert_eq!(StateKey::from_text(" \n\t").unwrap_err(), KeyError::Empty);
        let hex62 = "ab".repeat(31);
        let hex66 = "ab".repeat(33);
        assert_eq!(
            StateKey::from_text(&hex62).unwrap_err(),
            KeyError::WrongLength { bytes: 31 }
        );
        assert_eq!(
            StateKey::from_text(&hex66).unwrap_err(),
            KeyError::WrongLength { bytes: 33 }
        );
        assert_eq!(
            StateKey::from_text(&STANDARD.encode([1u8; 31])).unwrap_err(),
            KeyError::WrongLength { bytes: 31 }
        );
        assert_eq!(
            StateKey::from_text(&URL_SAFE_NO_PAD.encode([1u8; 33])).unwrap_err(),
            KeyError::WrongLength { bytes: 33 }
        );
        assert_eq!(
            StateKey::from_text(&STANDARD.encode([1u8; 64])).unwrap_err(),
            KeyError::WrongLength { bytes: 64 }
        );
        for bad in [
            "not a key",
            "zz".repeat(32).as_str(),
            "g".repeat(64).as_str(),
            "ab cd",
            "====",
            "é",
            &format!("{}!", "a".repeat(43)),
            // whitespace inside is not trimmed
            &format!("{} {}", "ab".repeat(16), "ab".repeat(16)),
        ] {
            let error = StateKey::from_text(bad).unwrap_err();
            assert!(
                matches!(error, KeyError::Invalid | KeyError::WrongLength { .. }),
                "{bad:?}: {error:?}"
            );
        }
        // Error messages never echo the input.
        let secret_ish = format!("{}!", "Q".repeat(43));
        let message = StateKey::from_text(&secret_ish).unwrap_err().to_string();
        assert!(!message.contains("QQQQ"), "{message}");
    }

    #[test]
    fn key_debug_does_not_print_the_key() {
        let key = StateKey::from_bytes([0x5a; 32]);
        assert_eq!(format!("{key:?}"), "StateKey(<redacted>)");
        assert_eq!(format!("{:?}", Sealer::new(&key)), "Sealer { .. }");
        assert_eq!(format!("{:?}", key.clone()), "StateKey(<redacted>)");
    }

    #[test]
    fn pause_id_display_parse_serde() {
        let id = PauseId::from_bytes([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 254, 255]);
        assert_eq!(id.to_string(), "000102030405060708090a0b0c0dfeff");
        assert_eq!(
            "000102030405060708090A0B0C0DFEFF".parse::<PauseId>(),
            Ok(id)
        );
        assert_eq!(
            serde_json::to_value(id).unwrap(),
            json!("000102030405060708090a0b0c0dfeff")
        );
        assert_eq!(
            serde_json::from_value::<PauseId>(json!("000102030405060708090a0b0c0dfeff")).unwrap(),
            id
        );
        for bad in ["", "00", &"0".repeat(31), &"0".repeat(33), &"g".repeat(32)] {
            assert_eq!(bad.parse::<PauseId>(), Err(InvalidPauseId), "{bad:?}");
        }
        assert!(serde_json::from_value::<PauseId>(json!(5)).is_err());
        assert_eq!(PauseId::from_bytes(*id.as_bytes()), id);
        assert_ne!(PauseId::random(), PauseId::random());
    }

    #[test]
    fn oversized_input_is_malformed_before_decoding() {
        let sealer = Sealer::new(&key(1));
        let huge = format!("mrs1.{}", "A".repeat(MAX_STATE_LEN));
        assert_eq!(sealer.open(&huge, NOW), Err(StateError::Malformed));
        let huge = "mrs1.".to_owned() + &"A".repeat(10 * 1024 * 1024);
        assert_eq!(sealer.open(&huge, NOW), Err(StateError::Malformed));
        // A long custom method still fits under the limit up to ~2,900 bytes.
        let long = Claims {
            method: "m".repeat(2_900),
            ..claims()
        };
        let state = sealer.seal(&long);
        assert!(state.len() <= MAX_STATE_LEN);
        assert_eq!(sealer.open(&state, NOW), Ok(long));
    }

    #[test]
    fn now_ms_is_plausible() {
        let now = now_ms();
        assert!(now > 1_700_000_000_000 && now < 4_000_000_000_000, "{now}");
    }

    /// The `mrs1` wire format pinned: states outlive the process (and a proxy upgrade), so the
    /// same key, nonce and claims must keep giving the same text. These are also the seeds of the
    /// `request_state_open` fuzz target (`fuzz/corpus/request_state_open/`, key `0x42` × 32).
    #[test]
    fn sealed_state_known_answers() {
        let sealer = Sealer::new(&key(0x42));
        let cases = [
            (
                Claims {
                    expires_at_ms: 4_000_000_000_000,
                    ..claims()
                },
                KAT_TOOLS_CALL,
            ),
            (
                Claims {
                    method: "completion/complete".to_owned(),
                    principal: Principal::anonymous(),
                    round: 7,
                    expires_at_ms: u64::MAX,
                    ..claims()
                },
                KAT_OTHER_METHOD,
            ),
        ];
        for (claims, expected) in cases {
            let state = sealer.seal_with_nonce(&claims, [0x24; NONCE_LEN]);
            assert_eq!(state, expected);
            assert_eq!(sealer.open(expected, NOW), Ok(claims));
        }
    }

    fn keyring(text: &str) -> Keyring {
        Keyring::from_text(text).unwrap()
    }

    const HEX_42: &str = "4242424242424242424242424242424242424242424242424242424242424242";
    const HEX_43: &str = "4343434343434343434343434343434343434343434343434343434343434343";

    /// The `mrs2` format pinned: a key with an id writes it into the state and binds it.
    #[test]
    fn keyring_state_known_answer() {
        let sealer = Sealer::with_keyring(&keyring(&format!("old {HEX_43}\nk-2026_07 {HEX_42}")));
        let claims = Claims {
            expires_at_ms: 4_000_000_000_000,
            ..claims()
        };
        let state = sealer.seal_with_nonce(&claims, [0x24; NONCE_LEN]);
        assert_eq!(state, KAT_KEYRING);
        assert_eq!(sealer.open(KAT_KEYRING, NOW), Ok(claims));
        // The same key without an id seals `mrs1`, and a different text.
        assert_ne!(
            &state["mrs2.k-2026_07.".len()..],
            &KAT_TOOLS_CALL["mrs1.".len()..]
        );
    }

    const KAT_KEYRING: &str = "mrs2.k-2026_07.JCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkpPV8zsWP5w0JhJSRpSOmYZmnRGF9wROFOshWcd542CNk26Nx3hdOG809QtvPI2md1mdd-bych0Pk3fPaXepWhFsmY0xCzdsM9xKMiEX7Yln9m3DApzhup6Dtp7CXt6AErFp2Gu6kfADw33MGzg";

    /// The newest key seals, every listed key opens, a retired key's state says so; an `mrs1`
    /// state of the old single key opens once that key is listed under an id.
    #[test]
    fn keys_rotate_without_losing_states() {
        let single = Sealer::new(&StateKey::from_text(HEX_43).unwrap());
        let old_format = single.seal(&claims());
        let sealer = Sealer::with_keyring(&keyring(&format!("a {HEX_43}")));
        let sealed_by_a = sealer.seal(&claims());
        assert!(sealed_by_a.starts_with("mrs2.a."), "{sealed_by_a}");
        assert_eq!(sealer.open(&old_format, NOW), Ok(claims()));

        // Rotate: b is added and seals; a still opens.
        sealer.replace(&keyring(&format!("a {HEX_43}\nb {HEX_42}")));
        let sealed_by_b = sealer.seal(&claims());
        assert!(sealed_by_b.starts_with("mrs2.b."), "{sealed_by_b}");
        assert_eq!(sealer.open(&sealed_by_a, NOW), Ok(claims()));
        assert_eq!(sealer.open(&sealed_by_b, NOW), Ok(claims()));

        // Retire a: its states are refused as such; b's still open.
        let clone = sealer.clone();
        sealer.replace(&keyring(&format!("b {HEX_42}")));
        assert_eq!(clone.open(&sealed_by_a, NOW), Err(StateError::RetiredKey));
        assert_eq!(clone.open(&sealed_by_b, NOW), Ok(claims()));
        assert_eq!(clone.open(&old_format, NOW), Err(StateError::Forged));

        // The id is bound: moved onto another key's id, the state is forged.
        let swapped = sealed_by_b.replacen("mrs2.b.", "mrs2.c.", 1);
        sealer.replace(&keyring(&format!("c {HEX_42}")));
        assert_eq!(sealer.open(&swapped, NOW), Err(StateError::Forged));
        for bad in [
            "mrs2.",
            "mrs2.b",
            "mrs2..AAAA",
            "mrs2.b!.AAAA",
            "mrs3.b.AAAA",
        ] {
            assert_eq!(sealer.open(bad, NOW), Err(StateError::Malformed), "{bad}");
        }
    }

    /// Forwarded requests (between instances) follow the keyring too.
    #[test]
    fn forwarded_requests_open_with_any_listed_key() {
        let sealer = Sealer::with_keyring(&keyring(&format!("a {HEX_43}")));
        let sealed = sealer.seal_forward(b"request");
        sealer.replace(&keyring(&format!("a {HEX_43}\nb {HEX_42}")));
        assert_eq!(
            sealer.open_forward(&sealed).as_deref(),
            Some(&b"request"[..])
        );
        sealer.replace(&keyring(&format!("b {HEX_42}")));
        assert_eq!(sealer.open_forward(&sealed), None);
    }

    const KAT_TOOLS_CALL: &str = "mrs1.JCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkpPV8zsWP5w0JhJSRpSOmYZmnRGF9wROFOshWcd542CNk26Nx3hdOG809QtvPI2md1mdd-bych0Pk3fPaXepWhFsmY0xCzdsM9xKMiEX7Yln9m3DApzhup6Dtp7CXiUDb5tecm3EcZpgLs_va6w";
    const KAT_OTHER_METHOD: &str =
        "mrs1.JCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkpfV8zsWP5w0JhJSRpSOmYZmNPVHmJW8rpM-RPZZd9LZjQgL8jD_-k4ohp_8gb1zN-mdd-bych0Pk3fPaXepWhFsmY0xCzdsM9xKMiEX7Yln9m3DAoceRW_xAzA9oexZJpQdSCAu-yCox-30qwKsRfqotahPpOk4pn3IbR3JoHsg";

    fn arb_claims() -> impl Strategy<Value = Claims> {
        (
            any::<[u8; 16]>(),
            any::<[u8; 32]>(),
            prop_oneof![
                Just("tools/call".to_owned()),
                Just("resources/read".to_owned()),
                Just("prompts/get".to_owned()),
                ".{0,40}",
            ],
            any::<[u8; 32]>(),
            any::<u32>(),
            1u64..,
        )
            .prop_map(
                |(pause, principal, method, digest, round, expires)| Claims {
                    pause_id: PauseId::from_bytes(pause),
                    principal: Principal(principal),
                    method,
                    params_digest: digest,
                    round,
                    expires_at_ms: expires,
                },
            )
    }

    proptest! {
        #[test]
        fn prop_round_trip(claims in arb_claims(), key in any::<[u8; 32]>()) {
            let sealer = Sealer::new(&StateKey::from_bytes(key));
            let state = sealer.seal(&claims);
            prop_assert!(state.len() <= TYPICAL_STATE_LEN + (claims.method.len() * 4).div_ceil(3) + 1);
            let now = claims.expires_at_ms - 1;
            prop_assert_eq!(sealer.open(&state, now), Ok(claims.clone()));
            prop_assert_eq!(
                sealer.open_for(&state, now, &claims.principal, &claims.method, &claims.params_digest),
                Ok(claims.clone())
            );
            prop_assert_eq!(sealer.open(&state, claims.expires_at_ms), Err(StateError::Expired));
        }

        #[test]
        fn prop_open_never_panics_on_arbitrary_strings(text in any::<String>(), now in any::<u64>()) {
            let sealer = Sealer::new(&key(1));
            let result = sealer.open(&text, now);
            prop_assert!(matches!(result, Err(StateError::Malformed | StateError::Forged)), "{:?}", result);
            let ring = Sealer::with_keyring(&Keyring::from_text(&format!("k1 {}", key(1).to_text())).unwrap());
            let result = ring.open(&text, now);
            prop_assert!(matches!(result, Err(StateError::Malformed | StateError::Forged | StateError::RetiredKey)), "{:?}", result);
        }

        #[test]
        fn prop_keyring_round_trip(claims in arb_claims(), key in any::<[u8; 32]>(), id in "[A-Za-z0-9_-]{1,32}") {
            let text = format!("{id} {}", StateKey::from_bytes(key).to_text());
            let sealer = Sealer::with_keyring(&Keyring::from_text(&text).unwrap());
            let state = sealer.seal(&claims);
            let expected_prefix = format!("mrs2.{id}.");
            prop_assert!(state.starts_with(&expected_prefix));
            let now = claims.expires_at_ms - 1;
            prop_assert_eq!(sealer.open(&state, now), Ok(claims.clone()));
            prop_assert_eq!(Sealer::new(&StateKey::from_bytes(key)).open(&state, now), Err(StateError::RetiredKey));
        }

        #[test]
        fn prop_open_never_accepts_arbitrary_payloads(
            payload in proptest::collection::vec(any::<u8>(), 0..400),
            tail in "[A-Za-z0-9_=.-]{0,300}",
            now in any::<u64>(),
        ) {
            let sealer = Sealer::new(&key(1));
            let principal = Principal::anonymous();
            for text in [
                format!("mrs1.{}", URL_SAFE_NO_PAD.encode(&payload)),
                format!("mrs1.{tail}"),
            ] {
                let result = sealer.open(&text, now);
                prop_assert!(matches!(result, Err(StateError::Malformed | StateError::Forged)), "{:?}", result);
                let result = sealer.open_for(&text, now, &principal, "tools/call", &[0; 32]);
                prop_assert!(matches!(result, Err(StateError::Malformed | StateError::Forged)), "{:?}", result);
            }
        }

        #[test]
        fn prop_mutated_states_are_rejected(
            claims in arb_claims(),
            index in any::<prop::sample::Index>(),
            mask in 1u8..,
        ) {
            let sealer = Sealer::new(&key(1));
            let state = sealer.seal(&claims);
            let mut raw = URL_SAFE_NO_PAD.decode(&state[5..]).unwrap();
            let at = index.index(raw.len());
            raw[at] ^= mask;
            let tampered = format!("mrs1.{}", URL_SAFE_NO_PAD.encode(&raw));
            prop_assert_eq!(sealer.open(&tampered, 0), Err(StateError::Forged));
        }

        /// Any single-byte change of the state *text* (replacement, insertion, deletion) fails
        /// to open, whatever the claims: non-canonical base64 included, and before any binding
        /// or expiry check.
        #[test]
        fn prop_any_single_byte_change_of_the_text_is_rejected(
            claims in arb_claims(),
            index in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            edit in 0u8..3,
        ) {
            let sealer = Sealer::new(&key(1));
            let state = sealer.seal(&claims);
            let mut bytes = state.clone().into_bytes();
            let at = index.index(bytes.len());
            match edit {
                0 => bytes[at] = byte,
                1 => bytes.insert(at, byte),
                _ => { bytes.remove(at); }
            }
            let edited = String::from_utf8_lossy(&bytes);
            prop_assume!(edited != state);
            let now = claims.expires_at_ms - 1;
            for result in [
                sealer.open(&edited, now),
                sealer.open_for(&edited, now, &claims.principal, &claims.method, &claims.params_digest),
            ] {
                prop_assert!(matches!(result, Err(StateError::Malformed | StateError::Forged)), "{:?}", result);
            }
        }

        /// `open_for` over arbitrary claims and arbitrary presented bindings and times: the first
        /// mismatch in the order principal, method, params, expiry is the error; all matching and
        /// unexpired is the claims.
        #[test]
        fn prop_bindings_and_expiry_are_enforced(
            claims in arb_claims(),
            other_principal in any::<[u8; 32]>(),
            other_method in ".{0,20}",
            other_digest in any::<[u8; 32]>(),
            use_other in any::<[bool; 3]>(),
            now in prop_oneof![any::<u64>(), Just(0u64)],
        ) {
            let sealer = Sealer::new(&key(3));
            let state = sealer.seal(&claims);
            let principal = if use_other[0] { Principal(other_principal) } else { claims.principal.clone() };
            let method = if use_other[1] { other_method } else { claims.method.clone() };
            let digest = if use_other[2] { other_digest } else { claims.params_digest };
            let expected = if principal != claims.principal {
                Err(StateError::WrongPrincipal)
            } else if method != claims.method {
                Err(StateError::WrongMethod)
            } else if digest != claims.params_digest {
                Err(StateError::WrongParams)
            } else if now >= claims.expires_at_ms {
                Err(StateError::Expired)
            } else {
                Ok(claims.clone())
            };
            prop_assert_eq!(sealer.open_for(&state, now, &principal, &method, &digest), expected);
            // `open` checks the expiry alone.
            let expected = if now >= claims.expires_at_ms { Err(StateError::Expired) } else { Ok(claims.clone()) };
            prop_assert_eq!(sealer.open(&state, now), expected);
            // Under another key nothing opens.
            prop_assert_eq!(Sealer::new(&key(4)).open(&state, now), Err(StateError::Forged));
        }
    }
}
