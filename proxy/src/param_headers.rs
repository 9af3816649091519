//! `Mcp-Param-{Name}` headers: tool arguments a 2026-07-28 client mirrors into HTTP headers
//! (Streamable HTTP, "Custom Headers from Tool Parameters", SEP-2243).
//!
//! A tool's `inputSchema` may mark a property with `x-mcp-header: "Region"`; a client calling the
//! tool over Streamable HTTP then sends the argument's value as `Mcp-Param-Region`, so that load
//! balancers and gateways can route on it without reading the body. Whoever processes the body
//! must check that the two agree (an intermediary may have routed on the header while the server
//! acts on the body) and refuse a disagreement with 400 and `-32020` (HeaderMismatch).
//!
//! Legacy servers may carry the annotation in their schemas (JSON Schema allows any `x-` key; a
//! server being migrated adds it before it speaks 2026-07-28), and they never check the headers
//! themselves: the proxy is the one that processes the body, so it checks. This module holds the
//! two pure halves:
//! - [`mirrored_params`] reads the annotations of one `inputSchema` and applies the
//!   specification's validity rules (a `properties`-only path from the root; `string`, `integer`
//!   or `boolean`; a non-empty token, unique regardless of case). An invalid annotation makes the
//!   whole tool definition invalid: conforming clients drop such a tool, and the proxy checks no
//!   header for it (it logs why);
//! - [`check`] compares the headers of one `tools/call` with its `arguments`.
//!
//! Which tools carry annotations is learnt from the legacy `tools/list` (the engine's
//! `ToolHeaderIndex`).

use crate::FastHashMap;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use base64::Engine as _;
use http::HeaderMap;
use serde_json::{Map, Value};

use crate::capabilities::CapabilityProfile;

/// The prefix of the mirrored headers, lower case (header names compare case-insensitively).
pub const HEADER_PREFIX: &str = "mcp-param-";

/// The annotation keyword.
pub const ANNOTATION: &str = "x-mcp-header";

/// The JSON types a mirrored parameter may have (`number` is not allowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ParamType {
    String,
    Integer,
    Boolean,
}

/// One annotated parameter of a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirroredParam {
    /// The chain of `properties` keys from the schema root to the parameter.
    pub path: Vec<String>,
    /// The `x-mcp-header` value as declared (`Region`); the header is `Mcp-Param-Region`.
    pub header: String,
    /// The lower-case header name (`mcp-param-region`), for the lookup.
    header_key: String,
    pub kind: ParamType,
}

impl MirroredParam {
    fn new(path: Vec<String>, header: &str, kind: ParamType) -> Self {
        MirroredParam {
            path,
            header: header.to_owned(),
            header_key: format!("{HEADER_PREFIX}{}", header.to_ascii_lowercase()),
            kind,
        }
    }

    /// The header's display name, `Mcp-Param-{header}`.
    pub fn header_name(&self) -> String {
        format!("Mcp-Param-{}", self.header)
    }

    /// The argument's path for messages: `arguments.region`.
    fn argument_path(&self) -> String {
        format!("arguments.{}", self.path.join("."))
    }
}

/// The annotated tools of one legacy `tools/list` (tools without annotations are not kept).
#[derive(Debug)]
pub struct ToolHeaders {
    /// [`crate::backend::LanePool::tools_generation`] when the list was asked for.
    pub generation: u64,
    pub loaded: Instant,
    pub tools: FastHashMap<String, Vec<MirroredParam>>,
}

impl ToolHeaders {
    /// Reads one page of a legacy `tools/list` result into `self.tools`; returns the tools whose
    /// annotations are invalid, with the reason (they are left out: no header is checked).
    pub fn add_page(&mut self, result: &Value) -> Vec<(String, String)> {
        let mut invalid = Vec::new();
        for tool in result
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            match tool.get("inputSchema").map(mirrored_params) {
                None => {}
                Some(Ok(params)) if params.is_empty() => {}
                Some(Ok(params)) => {
                    self.tools.insert(name.to_owned(), params);
                }
                Some(Err(reason)) => invalid.push((name.to_owned(), reason)),
            }
        }
        invalid
    }
}

/// What the proxy knows of the legacy tools' annotations, per capability profile (legacy servers
/// may list different tools to clients with different capabilities). Filled by the engine from
/// the legacy `tools/list`; stale once the legacy server announces a tool list change.
#[derive(Debug, Default)]
pub struct ToolHeaderIndex {
    /// Per profile; a handful at most, so a list searched in order (no hashing per call).
    known: RwLock<Vec<(CapabilityProfile, Arc<ToolHeaders>)>>,
    /// Held while a list is being fetched, so that concurrent calls wait for one fetch.
    pub loading: tokio::sync::Mutex<()>,
}

impl ToolHeaderIndex {
    /// The annotations known for `profile`, unless learnt before tool-list generation
    /// `generation`.
    pub fn current(
        &self,
        profile: &CapabilityProfile,
        generation: u64,
    ) -> Option<Arc<ToolHeaders>> {
        self.with_current(profile, generation, Arc::clone)
    }

    /// `decide` applied to the current annotations for `profile` (see
    /// [`ToolHeaderIndex::current`]) under the read lock: the per-call path, which copies
    /// nothing.
    pub fn with_current<R>(
        &self,
        profile: &CapabilityProfile,
        generation: u64,
        decide: impl FnOnce(&Arc<ToolHeaders>) -> R,
    ) -> Option<R> {
        let known = self
            .known
            .read()
            .unwrap_or_else(|poison| poison.into_inner());
        known
            .iter()
            .find(|(known, _)| known == profile)
            .map(|(_, headers)| headers)
            .filter(|headers| headers.generation >= generation)
            .map(decide)
    }

    pub fn store(&self, profile: &CapabilityProfile, headers: Arc<ToolHeaders>) {
        let mut known = self
            .known
            .write()
            .unwrap_or_else(|poison| poison.into_inner());
        match known.iter_mut().find(|(known, _)| known == profile) {
            Some((_, slot)) => *slot = headers,
            None => known.push((profile.clone(), headers)),
        }
    }
}

/// Keywords whose value is one subschema.
const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalItems",
    "additionalProperties",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
];
/// Keywords whose value is an array of subschemas.
const SCHEMA_ARRAY_KEYWORDS: &[&str] = &["allOf", "anyOf", "items", "oneOf", "prefixItems"];
/// Keywords whose value maps names to subschemas (`properties` is handled on its own).
const SCHEMA_MAP_KEYWORDS: &[&str] = &[
    "$defs",
    "definitions",
    "dependencies",
    "dependentSchemas",
    "patternProperties",
];

/// The annotated parameters of a tool, from its `inputSchema`; empty when it has none.
/// `Err` says why the annotations make the tool definition invalid.
pub fn mirrored_params(input_schema: &Value) -> Result<Vec<MirroredParam>, String> {
    let Some(root) = input_schema.as_object() else {
        return Ok(Vec::new());
    };
    if root.contains_key(ANNOTATION) {
        return Err(format!(
            "`{ANNOTATION}` must annotate a property, not the schema root"
        ));
    }
    let mut found = Vec::new();
    let mut path = Vec::new();
    collect(root, &mut path, &mut found)?;
    let mut seen = std::collections::HashSet::new();
    for param in &found {
        if !seen.insert(param.header_key.as_str()) {
            return Err(format!(
                "`{ANNOTATION}` value `{}` is used twice (values must be unique regardless of case)",
                param.header
            ));
        }
    }
    Ok(found)
}

/// Walks the `properties` chain under `schema` (whose own annotation, if any, was handled by the
/// caller), and makes sure no annotation sits anywhere else below it.
fn collect(
    schema: &Map<String, Value>,
    path: &mut Vec<String>,
    found: &mut Vec<MirroredParam>,
) -> Result<(), String> {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let Some(property) = property.as_object() else {
                continue;
            };
            path.push(name.clone());
            if let Some(annotation) = property.get(ANNOTATION) {
                found.push(annotated(property, annotation, path)?);
            }
            collect(property, path, found)?;
            path.pop();
        }
    }
    for (keyword, value) in schema {
        for subschema in subschemas(keyword, value) {
            forbid_below(subschema, keyword, path)?;
        }
    }
    Ok(())
}

/// The subschemas the applicator `keyword` holds in `value` (none for `properties`, which the
/// callers treat apart, or for keywords whose values are not schemas).
fn subschemas<'a>(keyword: &str, value: &'a Value) -> Vec<&'a Value> {
    let mut found = Vec::new();
    if SCHEMA_KEYWORDS.contains(&keyword) {
        found.push(value);
    }
    if SCHEMA_ARRAY_KEYWORDS.contains(&keyword) {
        found.extend(value.as_array().into_iter().flatten());
    }
    if SCHEMA_MAP_KEYWORDS.contains(&keyword) {
        found.extend(value.as_object().into_iter().flat_map(Map::values));
    }
    found
}

/// A subschema reached through `keyword`: neither it nor anything below it may carry an
/// annotation (the path to it is no longer `properties` only).
fn forbid_below(schema: &Value, keyword: &str, path: &[String]) -> Result<(), String> {
    let Some(object) = schema.as_object() else {
        return Ok(());
    };
    if object.contains_key(ANNOTATION) {
        let at = if path.is_empty() {
            "the root".to_owned()
        } else {
            format!("`{}`", path.join("."))
        };
        return Err(format!(
            "`{ANNOTATION}` under `{keyword}` (at {at}): only properties reached through \
             `properties` keys alone may be annotated"
        ));
    }
    // Below a forbidden keyword even `properties` chains do not count.
    for (name, value) in object {
        if name == "properties" {
            for property in value.as_object().into_iter().flat_map(Map::values) {
                forbid_below(property, keyword, path)?;
            }
        }
        for subschema in subschemas(name, value) {
            forbid_below(subschema, keyword, path)?;
        }
    }
    Ok(())
}

fn annotated(
    property: &Map<String, Value>,
    annotation: &Value,
    path: &[String],
) -> Result<MirroredParam, String> {
    let at = path.join(".");
    let Some(header) = annotation.as_str() else {
        return Err(format!("`{ANNOTATION}` of `{at}` must be a string"));
    };
    if header.is_empty() {
        return Err(format!("`{ANNOTATION}` of `{at}` is empty"));
    }
    if !header.bytes().all(is_tchar) {
        return Err(format!(
            "`{ANNOTATION}` of `{at}` (`{}`) is not an HTTP field-name token",
            header.escape_debug()
        ));
    }
    let kind = match property.get("type").and_then(Value::as_str) {
        Some("string") => ParamType::String,
        Some("integer") => ParamType::Integer,
        Some("boolean") => ParamType::Boolean,
        other => {
            return Err(format!(
                "`{ANNOTATION}` `{header}` annotates `{at}` of type {}: only string, integer and \
                 boolean parameters may be annotated",
                other.map_or_else(|| "(none)".to_owned(), |kind| format!("`{kind}`"))
            ))
        }
    };
    Ok(MirroredParam::new(path.to_vec(), header, kind))
}

/// `tchar` of RFC 9110 §5.6.2.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// Checks the `Mcp-Param-*` headers of one `tools/call` against its `arguments`: every annotated
/// argument present (and not `null`) must come with its header, and the header (Base64 sentinel
/// form decoded) must equal the value; a header whose argument is absent is a mismatch too.
/// `Err` is the message of the `-32020` error. Headers nobody annotated are ignored, as HTTP
/// requires of headers a server does not recognise.
pub fn check(
    params: &[MirroredParam],
    arguments: Option<&Value>,
    headers: &HeaderMap,
) -> Result<(), String> {
    for param in params {
        let value = arguments
            .and_then(|arguments| {
                param
                    .path
                    .iter()
                    .try_fold(arguments, |value, key| value.get(key))
            })
            .filter(|value| !value.is_null());
        let display = param.header_name();
        let present = headers.contains_key(param.header_key.as_str());
        let Some(value) = value else {
            if present {
                return Err(format!(
                    "`{display}` header sent, but `{}` is absent from the body",
                    param.argument_path()
                ));
            }
            continue;
        };
        let header = single_header(headers, param.header_key.as_str(), &display)?;
        let decoded = decode_header_value(header)
            .map_err(|problem| format!("`{display}` header {problem}"))?;
        if !matches(value, &decoded) {
            return Err(format!(
                "`{display}` header `{}` does not match body `{}` {value}",
                decoded.escape_debug(),
                param.argument_path()
            ));
        }
    }
    Ok(())
}

/// Whether a decoded header value stands for the body value: strings as they are, booleans as
/// `true`/`false`, numbers compared numerically (`42.0` and `42` agree).
fn matches(body: &Value, header: &str) -> bool {
    match body {
        Value::String(text) => text == header,
        Value::Bool(flag) => header == if *flag { "true" } else { "false" },
        Value::Number(number) => match (number.as_i64(), header.parse::<i64>()) {
            (Some(body), Ok(header)) => body == header,
            _ => match (number.as_f64(), header.parse::<f64>()) {
                (Some(body), Ok(header)) => header.is_finite() && body == header,
                _ => false,
            },
        },
        Value::Null | Value::Array(_) | Value::Object(_) => false,
    }
}

/// The one value of a header, surrounding whitespace removed. Missing, repeated, or not visible
/// ASCII is an error message naming the header.
pub fn single_header<'a>(
    headers: &'a http::HeaderMap,
    name: impl http::header::AsHeaderName,
    display: &str,
) -> Result<&'a str, String> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    let repeated = first.is_some() && values.next().is_some();
    single_value(first, repeated, display)
}

/// [`single_header`] of values already found: the first one (`None`: missing), and whether
/// there was another.
pub fn single_value<'a>(
    first: Option<&'a http::HeaderValue>,
    repeated: bool,
    display: &str,
) -> Result<&'a str, String> {
    let Some(value) = first else {
        return Err(format!("missing `{display}` header"));
    };
    if repeated {
        return Err(format!("`{display}` header is repeated"));
    }
    let value = value.to_str().map_err(|_| {
        format!("`{display}` header contains invalid characters (use the `=?base64?…?=` form)")
    })?;
    // Visible ASCII and tabs only (`to_str`): the only whitespace to trim is spaces and tabs.
    Ok(value.trim_ascii())
}

/// Decodes a header value that may use the `=?base64?{value}?=` sentinel form (standard alphabet,
/// padded, UTF-8 inside). A value without both markers is taken literally.
pub fn decode_header_value(value: &str) -> Result<std::borrow::Cow<'_, str>, String> {
    const PREFIX: &str = "=?base64?";
    const SUFFIX: &str = "?=";
    let Some(encoded) = value
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_suffix(SUFFIX))
    else {
        return Ok(std::borrow::Cow::Borrowed(value));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|error| format!("is not valid base64 ({error})"))?;
    String::from_utf8(bytes)
        .map(std::borrow::Cow::Owned)
        .map_err(|_| "decodes to bytes that are not UTF-8".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema_with(properties: Value) -> Value {
        json!({ "type": "object", "properties": properties })
    }

    fn region_tool() -> Vec<MirroredParam> {
        mirrored_params(&schema_with(json!({
            "region": { "type": "string", "x-mcp-header": "Region" },
            "query": { "type": "string" },
            "limit": { "type": "integer", "x-mcp-header": "Limit" },
            "dry": { "type": "boolean", "x-mcp-header": "Dry-Run" },
        })))
        .unwrap()
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                http::HeaderValue::from_bytes(value.as_bytes()).unwrap(),
            );
        }
        map
    }

    #[test]
    fn annotations_are_read_with_their_paths_and_types() {
        let params = mirrored_params(&schema_with(json!({
            "region": { "type": "string", "x-mcp-header": "Region" },
            "target": {
                "type": "object",
                "properties": { "tenant": { "type": "integer", "x-mcp-header": "Tenant" } }
            },
            "plain": { "type": "string" },
        })))
        .unwrap();
        let mut summary: Vec<_> = params
            .iter()
            .map(|param| (param.path.join("."), param.header.clone(), param.kind))
            .collect();
        summary.sort();
        assert_eq!(
            summary,
            [
                ("region".into(), "Region".into(), ParamType::String),
                ("target.tenant".into(), "Tenant".into(), ParamType::Integer),
            ]
        );
        assert_eq!(params[0].header_name(), "Mcp-Param-Region");
        assert!(
            mirrored_params(&schema_with(json!({ "a": { "type": "string" } })))
                .unwrap()
                .is_empty()
        );
        // A property that is *named* like the keyword is not an annotation.
        assert!(mirrored_params(&schema_with(
            json!({ "x-mcp-header": { "type": "string" } })
        ))
        .unwrap()
        .is_empty());
    }

    #[test]
    fn invalid_annotations_make_the_tool_invalid() {
        let cases = [
            (json!({ "type": "object", "x-mcp-header": "Root" }), "root"),
            (
                schema_with(json!({ "a": { "type": "string", "x-mcp-header": "" } })),
                "empty",
            ),
            (
                schema_with(json!({ "a": { "type": "string", "x-mcp-header": "Bad Name" } })),
                "token",
            ),
            (
                schema_with(json!({ "a": { "type": "string", "x-mcp-header": "A\r\nB" } })),
                "token",
            ),
            (
                schema_with(json!({ "a": { "type": "number", "x-mcp-header": "A" } })),
                "`number`",
            ),
            (
                schema_with(json!({ "a": { "type": "object", "x-mcp-header": "A" } })),
                "`object`",
            ),
            (
                schema_with(json!({ "a": { "x-mcp-header": "A" } })),
                "(none)",
            ),
            (
                schema_with(json!({
                    "a": { "type": "string", "x-mcp-header": "Same" },
                    "b": { "type": "string", "x-mcp-header": "same" },
                })),
                "twice",
            ),
            (
                schema_with(json!({
                    "list": { "type": "array", "items": { "type": "string", "x-mcp-header": "I" } }
                })),
                "`items`",
            ),
            (
                json!({ "type": "object", "oneOf": [
                    { "properties": { "a": { "type": "string", "x-mcp-header": "A" } } }
                ] }),
                "`oneOf`",
            ),
            (
                json!({ "type": "object", "$defs": {
                    "Inner": { "type": "string", "x-mcp-header": "A" }
                } }),
                "`$defs`",
            ),
            (
                json!({ "type": "object", "if": { "properties": {
                    "a": { "properties": { "b": { "type": "string", "x-mcp-header": "B" } } }
                } } }),
                "`if`",
            ),
        ];
        for (schema, reason) in cases {
            let error = mirrored_params(&schema).expect_err(&schema.to_string());
            assert!(error.contains(reason), "{schema}: {error}");
        }
        // Keywords whose values are not schemas are not searched.
        let schema = json!({ "type": "object", "properties": {},
            "dependentRequired": { "x-mcp-header": ["a"] },
            "default": { "x-mcp-header": "A" },
            "required": ["x-mcp-header"] });
        assert_eq!(mirrored_params(&schema), Ok(Vec::new()));
    }

    #[test]
    fn matching_headers_pass() {
        let params = region_tool();
        let arguments = json!({ "region": "us-west1", "query": "q", "limit": 42, "dry": true });
        let sent = headers(&[
            ("mcp-param-region", "us-west1"),
            ("MCP-PARAM-LIMIT", "42"),
            ("Mcp-Param-Dry-Run", "true"),
            ("Mcp-Param-Unknown", "ignored"),
        ]);
        assert_eq!(check(&params, Some(&arguments), &sent), Ok(()));
        // Surrounding whitespace is not part of the value; 42.0 and 42 agree.
        let sent = headers(&[
            ("mcp-param-region", "  us-west1\t"),
            ("mcp-param-limit", "42.0"),
            ("mcp-param-dry-run", "true"),
        ]);
        assert_eq!(check(&params, Some(&arguments), &sent), Ok(()));
        // Absent and null arguments expect no header.
        let arguments = json!({ "query": "q", "region": null });
        assert_eq!(check(&params, Some(&arguments), &headers(&[])), Ok(()));
        assert_eq!(check(&params, None, &headers(&[])), Ok(()));
    }

    #[test]
    fn base64_sentinel_values_are_decoded_and_other_values_are_literal() {
        let params = region_tool();
        let with = |region: &str, header: &str| {
            check(
                &params,
                Some(&json!({ "region": region })),
                &headers(&[("mcp-param-region", header)]),
            )
        };
        assert_eq!(with("Hello", "=?base64?SGVsbG8=?="), Ok(()));
        assert_eq!(
            with("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            Ok(())
        );
        assert_eq!(with(" padded ", "=?base64?IHBhZGRlZCA=?="), Ok(()));
        // Not wrapped exactly: literal.
        assert_eq!(with("SGVsbG8=", "SGVsbG8="), Ok(()));
        assert_eq!(with("=?base64?SGVsbG8=", "=?base64?SGVsbG8="), Ok(()));
        // Bad padding, bad alphabet: refused.
        assert!(with("Hello", "=?base64?SGVsbG8?=")
            .unwrap_err()
            .contains("base64"));
        assert!(with("Hello", "=?base64?SGVs!!!bG8=?=")
            .unwrap_err()
            .contains("base64"));
        // The wrapper is not stripped from a mismatch.
        assert!(with("Hello", "=?base64?SGVsbG9v?=").is_err());
    }

    #[test]
    fn disagreements_are_refused_with_a_message_naming_the_header() {
        let params = region_tool();
        let arguments = json!({ "region": "us-west1", "limit": 7, "dry": false });
        let refused = |pairs: &[(&str, &str)]| {
            check(&params, Some(&arguments), &headers(pairs)).expect_err("refused")
        };
        let all_but = |name: &str, value: &str| {
            let mut pairs = vec![
                ("mcp-param-region", "us-west1"),
                ("mcp-param-limit", "7"),
                ("mcp-param-dry-run", "false"),
            ];
            pairs.retain(|(header, _)| *header != name);
            if !value.is_empty() {
                pairs.push((name, value));
            }
            refused(&pairs)
        };
        assert!(all_but("mcp-param-region", "eu-west1").contains("Mcp-Param-Region"));
        assert!(all_but("mcp-param-region", "").contains("missing `Mcp-Param-Region`"));
        assert!(all_but("mcp-param-limit", "8").contains("arguments.limit"));
        assert!(all_but("mcp-param-limit", "7.5").contains("Mcp-Param-Limit"));
        assert!(all_but("mcp-param-dry-run", "False").contains("Mcp-Param-Dry-Run"));
        assert!(all_but("mcp-param-dry-run", "0").contains("Mcp-Param-Dry-Run"));
        // Repeated header.
        let error = refused(&[
            ("mcp-param-region", "us-west1"),
            ("mcp-param-region", "us-west1"),
            ("mcp-param-limit", "7"),
            ("mcp-param-dry-run", "false"),
        ]);
        assert!(error.contains("repeated"), "{error}");
        // Header for an absent argument.
        let error = check(
            &params,
            Some(&json!({})),
            &headers(&[("mcp-param-region", "us-west1")]),
        )
        .unwrap_err();
        assert!(error.contains("absent"), "{error}");
        // A value that cannot be mirrored at all.
        let error = check(
            &params,
            Some(&json!({ "region": ["a"] })),
            &headers(&[("mcp-param-region", "a")]),
        )
        .unwrap_err();
        assert!(error.contains("does not match"), "{error}");
    }

    #[test]
    fn tool_lists_keep_annotated_tools_and_report_invalid_ones() {
        let mut headers = ToolHeaders {
            generation: 3,
            loaded: Instant::now(),
            tools: FastHashMap::default(),
        };
        let invalid = headers.add_page(&json!({ "tools": [
            { "name": "route", "inputSchema": schema_with(json!({
                "region": { "type": "string", "x-mcp-header": "Region" } })) },
            { "name": "plain", "inputSchema": schema_with(json!({ "a": { "type": "string" } })) },
            { "name": "broken", "inputSchema": schema_with(json!({
                "n": { "type": "number", "x-mcp-header": "N" } })) },
            { "inputSchema": {} },
        ] }));
        assert_eq!(headers.tools.keys().collect::<Vec<_>>(), ["route"]);
        assert_eq!(invalid.len(), 1);
        assert_eq!(invalid[0].0, "broken");

        let index = ToolHeaderIndex::default();
        let profile = CapabilityProfile::default();
        assert!(index.current(&profile, 0).is_none());
        index.store(&profile, Arc::new(headers));
        assert!(index.current(&profile, 3).is_some());
        // A tool list change since: stale.
        assert!(index.current(&profile, 4).is_none());
        let other = CapabilityProfile {
            elicitation_form: true,
            ..CapabilityProfile::default()
        };
        assert!(index.current(&other, 0).is_none());
    }

    #[test]
    fn header_values_outside_visible_ascii_are_refused() {
        let params = region_tool();
        let mut sent = HeaderMap::new();
        sent.insert(
            "mcp-param-region",
            http::HeaderValue::from_bytes("café".as_bytes()).unwrap(),
        );
        let error = check(&params, Some(&json!({ "region": "café" })), &sent).unwrap_err();
        assert!(error.contains("invalid characters"), "{error}");
    }
}
