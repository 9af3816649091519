//! Shapes of syntax the analyzer asks about, without any state of its own: a pattern's bindings,
//! a `match` arm's method literal, names that send or seal, literal arguments (URLs, keys).

use proc_macro2::Span;

use super::words;

pub(super) fn last_ident(path: &syn::Path) -> Option<&str> {
    // `Ident` has no `as_str`; the macros of interest are matched through this small table.
    let last = path.segments.last()?;
    ["macro_rules", "json", "elicit_safe", "format", "matches"]
        .into_iter()
        .find(|name| last.ident == name)
}

pub(super) fn pattern_idents(pat: &syn::Pat, out: &mut Vec<String>) {
    match pat {
        syn::Pat::Ident(ident) => {
            out.push(ident.ident.to_string());
            if let Some((_, sub)) = &ident.subpat {
                pattern_idents(sub, out);
            }
        }
        syn::Pat::Type(typed) => pattern_idents(&typed.pat, out),
        syn::Pat::Reference(reference) => pattern_idents(&reference.pat, out),
        syn::Pat::Tuple(tuple) => tuple.elems.iter().for_each(|p| pattern_idents(p, out)),
        syn::Pat::TupleStruct(tuple) => tuple.elems.iter().for_each(|p| pattern_idents(p, out)),
        syn::Pat::Struct(pat_struct) => pat_struct
            .fields
            .iter()
            .for_each(|field| pattern_idents(&field.pat, out)),
        syn::Pat::Slice(slice) => slice.elems.iter().for_each(|p| pattern_idents(p, out)),
        syn::Pat::Or(or) => or.cases.iter().for_each(|p| pattern_idents(p, out)),
        syn::Pat::Paren(paren) => pattern_idents(&paren.pat, out),
        _ => {}
    }
}

/// The JSON-RPC method a match arm matches on (`"roots/list" => ..`), if any: a string literal
/// pattern that looks like a method name (see [`is_method_name`]). Other string patterns (tool,
/// prompt or resource names: `"multi_request" => ..` inside a `call_tool` helper) are not methods.
pub(super) fn arm_method_literal(pat: &syn::Pat) -> Option<String> {
    match pat {
        syn::Pat::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) => Some(lit.value()).filter(|value| is_method_name(value)),
        syn::Pat::Or(or) => or.cases.iter().find_map(arm_method_literal),
        _ => None,
    }
}

/// Whether a string has the shape of an MCP JSON-RPC method: `initialize`, `ping`, or
/// `segment/segment[/...]` with ASCII letters and `_` only (`tools/call`,
/// `notifications/roots/list_changed`). Every method of every MCP revision has that shape,
/// while tool names may not contain `/` (the spec's tool-name rule allows `A-Z a-z 0-9 _ - .`)
/// and resource URIs contain `:`.
pub(super) fn is_method_name(value: &str) -> bool {
    if matches!(value, "initialize" | "ping") {
        return true;
    }
    let mut segments = value.split('/');
    let first = segments.next().unwrap_or_default();
    let valid = |segment: &str| {
        !segment.is_empty()
            && segment
                .bytes()
                .all(|b| b.is_ascii_alphabetic() || b == b'_')
    };
    let mut count = 1;
    valid(first)
        && segments.all(|segment| {
            count += 1;
            valid(segment)
        })
        && count > 1
}

/// Whether a function, method or type name says it sends a JSON-RPC message
/// (`send_raw`, `request`, `notify`, `Notification::new`, `call_method`, ...). Method-name literals
/// are only checked as arguments of such calls, not of `peer_error("roots/list")`-style labels.
pub(super) fn is_sending_name(name: &str) -> bool {
    words::words(name).iter().any(|word| {
        matches!(
            word.as_str(),
            "send"
                | "request"
                | "req"
                | "notify"
                | "notification"
                | "call"
                | "emit"
                | "dispatch"
                | "post"
                | "invoke"
                | "rpc"
                | "raw"
                | "method"
                | "message"
                | "forward"
        )
    })
}

pub(super) use super::words::is_sealing_name;

pub(super) fn strip_some(expr: &syn::Expr) -> &syn::Expr {
    if let syn::Expr::Call(call) = expr {
        if let syn::Expr::Path(func) = &*call.func {
            if func.path.is_ident("Some") && call.args.len() == 1 {
                return &call.args[0];
            }
        }
    }
    expr
}

pub(super) fn is_some_call(expr: &syn::Expr) -> bool {
    !std::ptr::eq(strip_some(expr), expr)
}

pub(super) fn is_none(expr: &syn::Expr) -> bool {
    matches!(expr, syn::Expr::Path(path) if path.path.is_ident("None"))
}

/// The literal text of a URL argument: `".."`, `Url::parse("..")`, `"..".parse()`,
/// `"..".to_string()`, `String::from("..")`, `format!("..", ..)`, through `?`, `.unwrap()` and `&`.
pub(super) fn url_literal(expr: &syn::Expr) -> Option<(String, Span)> {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) => Some((lit.value(), lit.span())),
        syn::Expr::Call(call) => call.args.first().and_then(url_literal),
        syn::Expr::MethodCall(call) => url_literal(&call.receiver),
        syn::Expr::Try(inner) => url_literal(&inner.expr),
        syn::Expr::Reference(inner) => url_literal(&inner.expr),
        syn::Expr::Paren(inner) => url_literal(&inner.expr),
        syn::Expr::Macro(mac) if last_ident(&mac.mac.path) == Some("format") => {
            let lit: syn::LitStr = mac
                .mac
                .parse_body_with(|input: syn::parse::ParseStream| {
                    let lit: syn::LitStr = input.parse()?;
                    let _rest: proc_macro2::TokenStream = input.parse()?;
                    Ok(lit)
                })
                .ok()?;
            Some((lit.value(), lit.span()))
        }
        _ => None,
    }
}

/// The length of a literal key: `b".."`, `"..".as_bytes()`, `&[..]` of byte literals.
pub(super) fn literal_key_length(expr: &syn::Expr) -> Option<(usize, Span)> {
    match expr {
        syn::Expr::Lit(syn::ExprLit { lit, .. }) => match lit {
            syn::Lit::ByteStr(bytes) => Some((bytes.value().len(), bytes.span())),
            syn::Lit::Str(text) => Some((text.value().len(), text.span())),
            _ => None,
        },
        syn::Expr::MethodCall(call) => literal_key_length(&call.receiver),
        syn::Expr::Reference(inner) => literal_key_length(&inner.expr),
        syn::Expr::Paren(inner) => literal_key_length(&inner.expr),
        _ => None,
    }
}

/// Whether a builder chain starts at `ElicitationSchema::builder()`.
pub(super) fn builds_elicitation_schema(expr: &syn::Expr) -> bool {
    match expr {
        syn::Expr::MethodCall(call) => builds_elicitation_schema(&call.receiver),
        syn::Expr::Call(call) => matches!(&*call.func, syn::Expr::Path(path)
            if path.path.segments.iter().any(|s| s.ident == "ElicitationSchema" || s.ident == "ElicitationSchemaBuilder")),
        syn::Expr::Path(path) => path
            .path
            .segments
            .iter()
            .any(|s| s.ident == "ElicitationSchema" || s.ident == "ElicitationSchemaBuilder"),
        syn::Expr::Paren(inner) => builds_elicitation_schema(&inner.expr),
        _ => false,
    }
}
