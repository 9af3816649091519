//! The security and MRTR-shape rules in TypeScript/JavaScript: secrets asked for in a form
//! elicitation's `requestedSchema`, unsafe URL-mode elicitation URLs, `requestState` built from
//! plain data, and `input_required` answered to a method other than `tools/call`,
//! `resources/read` and `prompts/get`. Syntax-only tests on object literals and calls; the
//! analyzer decides where they apply (see `docs/lint/typescript.md`).

use oxc_ast::ast::{Argument, Expression, ObjectExpression, ObjectPropertyKind, PropertyKey};
use oxc_span::{GetSpan, Span};

use super::shapes::{property, static_string};
use crate::rust::words;

/// Whether an object literal has a non-computed key among `keys` (one scan of its properties,
/// without building names).
pub(super) fn has_key(object: &ObjectExpression<'_>, keys: &[&str]) -> bool {
    object.properties.iter().any(|kind| {
        let ObjectPropertyKind::ObjectProperty(field) = kind else {
            return false;
        };
        let name = match &field.key {
            _ if field.computed => return false,
            PropertyKey::StaticIdentifier(identifier) => identifier.name.as_str(),
            PropertyKey::StringLiteral(literal) => literal.value.as_str(),
            _ => return false,
        };
        keys.contains(&name)
    })
}

/// The methods that may answer `input_required` (MRTR).
const MRTR_METHODS: &[&str] = &["tools/call", "resources/read", "prompts/get"];

/// The secret-looking property names of a form elicitation's `requestedSchema` (`{ message,
/// requestedSchema: { properties: { password: .. } } }`), with the span of each key. Nothing
/// for a URL-mode object (`mode: "url"`).
pub(super) fn secret_properties(object: &ObjectExpression<'_>) -> Vec<(Span, String)> {
    if mode(object) == Some("url") {
        return Vec::new();
    }
    let Some(Expression::ObjectExpression(schema)) =
        property(object, "requestedSchema").map(|p| p.value.get_inner_expression())
    else {
        return Vec::new();
    };
    let Some(Expression::ObjectExpression(properties)) =
        property(schema, "properties").map(|p| p.value.get_inner_expression())
    else {
        return Vec::new();
    };
    properties
        .properties
        .iter()
        .filter_map(|kind| {
            let ObjectPropertyKind::ObjectProperty(field) = kind else {
                return None;
            };
            let name = field.key.static_name()?;
            (!field.computed && words::is_secret_name(&name))
                .then(|| (field.key.span(), name.into_owned()))
        })
        .collect()
}

/// What is wrong with the `url` of a URL-mode elicitation object (`mode: "url"`, or any object
/// when `url_mode` says its call is URL mode, as `inputRequired.elicitUrl(..)`), when the URL is
/// written in place: the span of the value and the problem.
pub(super) fn url_problem(object: &ObjectExpression<'_>, url_mode: bool) -> Option<(Span, String)> {
    if !url_mode && mode(object) != Some("url") {
        return None;
    }
    let url = property(object, "url")?;
    let text = url_text(&url.value)?;
    Some((url.value.span(), words::url_problem(&text)?))
}

/// The `mode` of an elicitation object, when written as a string.
fn mode<'e>(object: &'e ObjectExpression<'_>) -> Option<&'e str> {
    property(object, "mode").and_then(|mode| static_string(&mode.value))
}

/// The text of a URL written in place: a string literal, or a template literal with each
/// substitution as an opaque `{}` placeholder.
fn url_text(expression: &Expression<'_>) -> Option<String> {
    if let Some(text) = static_string(expression) {
        return Some(text.to_owned());
    }
    let Expression::TemplateLiteral(template) = expression.get_inner_expression() else {
        return None;
    };
    let mut text = String::new();
    for (index, quasi) in template.quasis.iter().enumerate() {
        if index > 0 {
            text.push_str("{}");
        }
        text.push_str(quasi.value.cooked.as_ref()?.as_str());
    }
    Some(text)
}

/// Whether a `requestState` value is built from plain data, with no seal or MAC: a string or
/// template literal, `JSON.stringify(..)`, `btoa(..)`, `Buffer.from(..)` and `.toString(..)` /
/// `String(..)` of one, or (`is_plain_binding`) a variable bound to one. Any other call (a
/// sealing one such as `codec.mint(..)` or `signState(..)`) is not plain; neither is a value the
/// linter cannot see into (a parameter, a field).
pub(super) fn is_plain_state(
    value: &Expression<'_>,
    is_plain_binding: &dyn Fn(&str) -> bool,
) -> bool {
    match value.get_inner_expression() {
        Expression::StringLiteral(_) | Expression::TemplateLiteral(_) => true,
        Expression::Identifier(identifier) => is_plain_binding(identifier.name.as_str()),
        Expression::CallExpression(call) => {
            let (receiver, name) = match call.callee.get_inner_expression() {
                Expression::Identifier(identifier) => (None, identifier.name.as_str()),
                Expression::StaticMemberExpression(member) => {
                    (Some(&member.object), member.property.name.as_str())
                }
                _ => return false,
            };
            match (receiver.map(Expression::get_inner_expression), name) {
                (Some(Expression::Identifier(object)), "stringify") => object.name == "JSON",
                (Some(Expression::Identifier(object)), "from") => object.name == "Buffer",
                (None, "btoa" | "String") => true,
                // `Buffer.from(JSON.stringify(x)).toString("base64")`, `x.toString()` of a plain
                // value.
                (Some(receiver), "toString" | "toJSON") => {
                    is_plain_state(receiver, is_plain_binding)
                        || matches!(receiver, Expression::Identifier(_))
                            && call.arguments.iter().any(|argument| {
                                matches!(argument, Argument::StringLiteral(s) if s.value == "base64")
                            })
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether a string has the shape of a protocol method (`tools/list`, `initialize`, `ping`):
/// `segment/segment[/..]` of letters and `_`. Tool, prompt and resource names have no `/`.
pub(super) fn is_method_string(text: &str) -> bool {
    matches!(text, "initialize" | "ping")
        || (text.contains('/')
            && text.split('/').all(|segment| {
                !segment.is_empty()
                    && segment
                        .chars()
                        .all(|ch| ch.is_ascii_alphabetic() || ch == '_')
            }))
}

/// Whether a method may answer `input_required`.
pub(super) fn is_mrtr_method(method: &str) -> bool {
    MRTR_METHODS.contains(&method)
}

/// The method of an SDK request schema (`ListToolsRequestSchema` → `tools/list`) as far as the
/// MRTR rule needs it: the three MRTR methods by name, any other `*RequestSchema` as itself.
pub(super) fn schema_method(schema: &str) -> Option<&str> {
    match schema {
        "CallToolRequestSchema" => Some("tools/call"),
        "ReadResourceRequestSchema" => Some("resources/read"),
        "GetPromptRequestSchema" => Some("prompts/get"),
        _ if schema.ends_with("RequestSchema") => Some(schema),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_strings() {
        for method in [
            "tools/list",
            "completion/complete",
            "initialize",
            "notifications/roots/list_changed",
        ] {
            assert!(is_method_string(method), "{method}");
        }
        for name in ["multi_request", "get-weather", "a//b", "tools/list2"] {
            assert!(!is_method_string(name), "{name}");
        }
    }
}
