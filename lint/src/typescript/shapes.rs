//! Syntax helpers of the TypeScript analyzer: literal strings, object properties, the extent of
//! a property to delete, spans.

use oxc_ast::ast::{
    Expression, NewExpression, ObjectExpression, ObjectProperty, ObjectPropertyKind,
};
use oxc_span::Span;

use crate::diagnostic::ByteSpan;

/// The value of a string literal, or of a template literal without substitutions.
pub(super) fn static_string<'e>(expression: &'e Expression<'_>) -> Option<&'e str> {
    match expression.get_inner_expression() {
        Expression::StringLiteral(literal) => Some(literal.value.as_str()),
        Expression::TemplateLiteral(template) if template.expressions.is_empty() => template
            .quasis
            .first()
            .and_then(|quasi| quasi.value.cooked.as_ref())
            .map(|cooked| cooked.as_str()),
        _ => None,
    }
}

pub(super) fn property<'e, 'a>(
    object: &'e ObjectExpression<'a>,
    name: &str,
) -> Option<&'e ObjectProperty<'a>> {
    object.properties.iter().find_map(|kind| match kind {
        ObjectPropertyKind::ObjectProperty(property)
            if !property.computed && property.key.static_name().as_deref() == Some(name) =>
        {
            Some(&**property)
        }
        _ => None,
    })
}

/// The `capabilities` property of each object-literal argument of `new X(...)`: what
/// `new Server(info, { capabilities })` declares.
pub(super) fn capabilities_arguments<'e, 'a>(
    new: &'e NewExpression<'a>,
) -> impl Iterator<Item = &'e ObjectProperty<'a>> {
    new.arguments.iter().filter_map(|argument| {
        match argument
            .as_expression()
            .map(Expression::get_inner_expression)
        {
            Some(Expression::ObjectExpression(options)) => property(options, "capabilities"),
            _ => None,
        }
    })
}

/// What to delete with one property of an object literal: its whole line when it stands alone
/// there, else the property and the comma after it (or, for the last one, the comma before it).
pub(super) fn property_extent(
    text: &str,
    object: &ObjectExpression<'_>,
    property: &ObjectProperty<'_>,
) -> ByteSpan {
    let start = property.span.start as usize;
    let mut end = property.span.end as usize;
    let rest = &text[end..];
    let after_blanks = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    let comma_after = rest[after_blanks..].starts_with(',');
    if comma_after {
        end += after_blanks + 1;
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let alone = text[line_start..start].trim().is_empty() && text[end..line_end].trim().is_empty();
    if alone && line_end < text.len() {
        return ByteSpan::new(line_start, line_end + 1);
    }
    if comma_after {
        let rest = &text[end..];
        let blanks = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        return ByteSpan::new(start, end + blanks);
    }
    // The last property: take the comma before it, if there is another property.
    let before = text[object.span.start as usize..start].trim_end();
    if before.ends_with(',') {
        let comma = object.span.start as usize + before.len() - 1;
        return ByteSpan::new(comma, end);
    }
    ByteSpan::new(start, end)
}

pub(super) fn byte_span(span: Span) -> ByteSpan {
    ByteSpan::new(span.start as usize, span.end as usize)
}
