//! Fixes for findings in Rust files, only when one of a file's findings has a rule with fixes: the
//! lint's syntax tree is walked again (the file is parsed again only when the caller has none),
//! and every syntax node that a fix rewrites is matched to its finding by rule and span — the
//! span the analyzer reported (a method name, a path, a `fn` name, a literal).
//!
//! - `deprecated-include-context` (unsafe): `ContextInclusion::ThisServer`/`AllServers` in an
//!   expression → `ContextInclusion::None`; `"thisServer"`/`"allServers"` JSON literal → `"none"`.
//! - `deprecated-logging` (unsafe): `.enable_logging()`/`.enable_logging_with(..)` removed from
//!   the builder chain; the `set_level` override of `impl ServerHandler` removed;
//!   `notify_logging_message(..)` statements → a `tracing` event with the same level and data.
//! - `server-initiated-request` (display-only): `Err(ErrorData::url_elicitation_required(..))`
//!   (-32042) → an `input_required` result with a URL-mode elicitation request.

use std::collections::HashMap;
use std::sync::Arc;

use mcp_migrate_rules::RuleId;
use proc_macro2::{TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::visit::Visit;

use super::{Applicability, Edit, Fix};
use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};

pub(super) fn attach(
    file: &Arc<SourceFile>,
    diagnostics: &mut [Diagnostic],
    syntax: Option<&syn::File>,
) {
    let wanted: HashMap<(RuleId, ByteSpan), usize> = diagnostics
        .iter()
        .enumerate()
        .filter(|(_, d)| {
            matches!(
                d.rule,
                RuleId::DeprecatedIncludeContext
                    | RuleId::DeprecatedLogging
                    | RuleId::ServerInitiatedRequest
            )
        })
        .map(|(index, d)| ((d.rule, d.span), index))
        .collect();
    if wanted.is_empty() {
        return;
    }
    // JSON literals need no syntax tree: the literal is the span.
    for diagnostic in diagnostics.iter_mut() {
        if diagnostic.rule == RuleId::DeprecatedIncludeContext {
            let text = diagnostic.snippet();
            if text == "\"thisServer\"" || text == "\"allServers\"" {
                diagnostic.fix = Some(Fix::new(
                    Applicability::Unsafe,
                    format!("send `\"none\"` instead of {text}"),
                    vec![Edit::replace(diagnostic.span, "\"none\"")],
                ));
            }
        }
    }
    let parsed;
    let syntax = match syntax {
        Some(syntax) => syntax,
        None => match syn::parse_file(&file.text) {
            Ok(syntax) => {
                parsed = syntax;
                &parsed
            }
            Err(_) => return,
        },
    };
    let mut finder = Finder {
        file,
        wanted: &wanted,
        in_pattern: 0,
        found: Vec::new(),
    };
    finder.visit_file(syntax);
    for (index, fix) in finder.found {
        diagnostics[index].fix.get_or_insert(fix);
    }
}

struct Finder<'a> {
    file: &'a SourceFile,
    /// Inside a pattern: paths there read a value (a `match` arm), they are not rewritten.
    in_pattern: usize,
    wanted: &'a HashMap<(RuleId, ByteSpan), usize>,
    found: Vec<(usize, Fix)>,
}

impl Finder<'_> {
    fn span(&self, span: proc_macro2::Span) -> ByteSpan {
        ByteSpan::from_proc_macro(self.file, span)
    }

    fn wanted(&self, rule: RuleId, span: proc_macro2::Span) -> Option<usize> {
        self.wanted.get(&(rule, self.span(span))).copied()
    }

    fn text(&self, node: &impl Spanned) -> &str {
        let span = self.span(node.span());
        &self.file.text[span.start..span.end]
    }

    /// The span of whole lines holding `span` when nothing else is on them, else `span` itself;
    /// a blank line left doubled by the removal goes too.
    fn removal(&self, span: ByteSpan) -> ByteSpan {
        let text = &self.file.text;
        let line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[span.end..]
            .find('\n')
            .map_or(text.len(), |i| span.end + i + 1);
        if !text[line_start..span.start].trim().is_empty()
            || !text[span.end..line_end].trim().is_empty()
        {
            return span;
        }
        let previous_blank = text[..line_start]
            .strip_suffix('\n')
            .and_then(|before| before.rsplit('\n').next())
            .is_some_and(|line| line.trim().is_empty() || line.trim_end().ends_with('{'));
        let next_end = text[line_end..]
            .find('\n')
            .map_or(text.len(), |i| line_end + i + 1);
        let next_blank = line_end < text.len() && text[line_end..next_end].trim().is_empty();
        if previous_blank && next_blank {
            return ByteSpan::new(line_start, next_end);
        }
        ByteSpan::new(line_start, line_end)
    }

    /// The whole lines of `span` when it starts its line and only a comment follows it there
    /// (a builder call on its own line, with its line comment).
    fn own_lines(&self, span: ByteSpan) -> Option<ByteSpan> {
        let text = &self.file.text;
        let line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[span.end..]
            .find('\n')
            .map_or(text.len(), |i| span.end + i + 1);
        let rest = text[span.end..line_end].trim();
        (text[line_start..span.start].trim().is_empty()
            && (rest.is_empty() || rest.starts_with("//")))
        .then(|| ByteSpan::new(line_start, line_end))
    }

    /// `notify_logging_message(ARG)` awaited in a statement: the tracing event replacing it.
    fn logging_statement(&self, stmt: &syn::Stmt, earlier: &[syn::Stmt]) -> Option<(usize, Fix)> {
        let expr = match stmt {
            syn::Stmt::Expr(expr, Some(_)) => expr,
            syn::Stmt::Local(local) if matches!(local.pat, syn::Pat::Wild(_)) => {
                &local.init.as_ref()?.expr
            }
            _ => return None,
        };
        let call = notify_call(expr)?;
        let index = self.wanted(RuleId::DeprecatedLogging, call.method.span())?;
        let [argument] = call.args.iter().collect::<Vec<_>>()[..] else {
            return None;
        };
        let event = self.log_event(argument, earlier)?;
        Some((
            index,
            Fix::new(
                Applicability::Unsafe,
                "log with a `tracing` event instead of `notifications/message`",
                vec![Edit::replace(self.span(stmt.span()), event)],
            ),
        ))
    }

    fn log_event(&self, argument: &syn::Expr, earlier: &[syn::Stmt]) -> Option<String> {
        if let Some(param) = LogParam::from_expr(argument) {
            let level = tracing_level(param.level)?;
            let logger = match param.logger {
                Some(logger) => format!("logger = {}, ", field_value(self.text(logger))),
                None => String::new(),
            };
            let data = self.text(param.data);
            return Some(format!("tracing::{level}!({logger}data = %{data});"));
        }
        // A binding made earlier in the block: its level, and its own `data`/`logger` fields.
        let syn::Expr::Path(path) = argument else {
            return None;
        };
        let name = path.path.get_ident()?;
        let init = earlier.iter().rev().find_map(|stmt| match stmt {
            syn::Stmt::Local(local) => match &local.pat {
                syn::Pat::Ident(binding) if binding.ident == *name => {
                    Some(&local.init.as_ref()?.expr)
                }
                _ => None,
            },
            _ => None,
        })?;
        let param = LogParam::from_expr(init)?;
        let level = tracing_level(param.level)?;
        Some(format!(
            "tracing::{level}!(logger = ?{name}.logger, data = %{name}.data);"
        ))
    }

    /// `ErrorData::url_elicitation_required(message, data)` (-32042) → an `input_required`
    /// result with a URL-mode elicitation request; `Err(that)` → `Ok(CallToolResponse::..)`.
    fn url_elicitation(&self, call: &syn::ExprCall, wrapped: bool) -> Option<(usize, Fix)> {
        let syn::Expr::Path(func) = &*call.func else {
            return None;
        };
        let index = self.wanted(RuleId::ServerInitiatedRequest, func.path.span())?;
        let message = call.args.first()?;
        let url = call
            .args
            .iter()
            .nth(1)
            .and_then(|data| value_after_key(data.to_token_stream(), "url"))
            .map_or_else(
                || quote!(todo!("the URL the -32042 error carried")),
                |url| match url {
                    syn::Expr::Lit(_) | syn::Expr::Path(_) => quote!(#url.to_string()),
                    _ => quote!((#url).to_string()),
                },
            );
        let result: syn::Expr = syn::parse_quote! {
            InputRequiredResult::from_input_requests(InputRequests::from([(
                "url".to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(
                    ElicitRequestParams::UrlElicitationParams {
                        meta: None,
                        message: String::from(#message),
                        url: #url,
                        elicitation_id: String::new(),
                    },
                )),
            )]))
        };
        let (replacement, message): (syn::Expr, &str) = if wrapped {
            (
                syn::parse_quote!(Ok(CallToolResponse::InputRequired(#result))),
                "return an `input_required` result with a URL-mode elicitation request \
                 (the handler must return `CallToolResponse`; the retry carries the user's answer \
                 under `url`)",
            )
        } else {
            (
                result,
                "build an `input_required` result with a URL-mode elicitation request instead \
                 of the -32042 error, and return it as `CallToolResponse::InputRequired`",
            )
        };
        Some((
            index,
            Fix::new(
                Applicability::DisplayOnly,
                message,
                vec![Edit::replace(
                    self.span(call.span()),
                    super::format_expr(&replacement),
                )],
            ),
        ))
    }
}

/// `Err(inner)`: the inner call.
fn err_call(call: &syn::ExprCall) -> Option<&syn::ExprCall> {
    let syn::Expr::Path(err) = &*call.func else {
        return None;
    };
    if !err.path.is_ident("Err") || call.args.len() != 1 {
        return None;
    }
    match &call.args[0] {
        syn::Expr::Call(inner) => Some(inner),
        _ => None,
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_pat(&mut self, pat: &'ast syn::Pat) {
        self.in_pattern += 1;
        syn::visit::visit_pat(self, pat);
        self.in_pattern -= 1;
    }

    fn visit_expr_path(&mut self, expr: &'ast syn::ExprPath) {
        if let Some(last) = expr.path.segments.last().filter(|_| self.in_pattern == 0) {
            if last.ident == "ThisServer" || last.ident == "AllServers" {
                if let Some(index) = self.wanted(RuleId::DeprecatedIncludeContext, expr.path.span())
                {
                    let span = self.span(last.ident.span());
                    self.found.push((
                        index,
                        Fix::new(
                            Applicability::Unsafe,
                            format!("use `ContextInclusion::None` instead of `{}`", last.ident),
                            vec![Edit::replace(span, "None")],
                        ),
                    ));
                }
            }
        }
        syn::visit::visit_expr_path(self, expr);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        if call.method == "enable_logging" || call.method == "enable_logging_with" {
            if let Some(index) = self.wanted(RuleId::DeprecatedLogging, call.method.span()) {
                let dot = self.span(call.dot_token.span).start;
                let end = self.span(call.span()).end;
                let span = self
                    .own_lines(ByteSpan::new(dot, end))
                    .unwrap_or_else(|| ByteSpan::new(self.span(call.receiver.span()).end, end));
                self.found.push((
                    index,
                    Fix::new(
                        Applicability::Unsafe,
                        format!("remove `.{}(..)`", call.method),
                        vec![Edit::delete(span)],
                    ),
                ));
            }
        }
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        // `Err(..)` first: its fix wins over the bare call's for the same finding.
        let found = err_call(call)
            .and_then(|inner| self.url_elicitation(inner, true))
            .map(|(index, mut fix)| {
                fix.edits[0].span = self.span(call.span());
                (index, fix)
            })
            .or_else(|| self.url_elicitation(call, false));
        if let Some(found) = found {
            self.found.push(found);
        }
        syn::visit::visit_expr_call(self, call);
    }

    fn visit_block(&mut self, block: &'ast syn::Block) {
        for (position, stmt) in block.stmts.iter().enumerate() {
            if let Some(found) = self.logging_statement(stmt, &block.stmts[..position]) {
                self.found.push(found);
            }
        }
        syn::visit::visit_block(self, block);
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        let server_handler = item
            .trait_
            .as_ref()
            .and_then(|(_, path, _)| path.segments.last())
            .is_some_and(|segment| segment.ident == "ServerHandler");
        if server_handler {
            for member in &item.items {
                let syn::ImplItem::Fn(function) = member else {
                    continue;
                };
                if function.sig.ident != "set_level" {
                    continue;
                }
                if let Some(index) =
                    self.wanted(RuleId::DeprecatedLogging, function.sig.ident.span())
                {
                    let span = self.removal(self.span(function.span()));
                    self.found.push((
                        index,
                        Fix::new(
                            Applicability::Unsafe,
                            "remove the `set_level` override (MCP 2026-07-28 has no `logging/setLevel`)",
                            vec![Edit::delete(span)],
                        ),
                    ));
                }
            }
        }
        syn::visit::visit_item_impl(self, item);
    }
}

/// The `notify_logging_message(..)` call inside `call.await`, `call.await?`,
/// `call.await.ok()` / `.unwrap()` / `.expect(..)` / `.map_err(..)?`.
fn notify_call(expr: &syn::Expr) -> Option<&syn::ExprMethodCall> {
    match expr {
        syn::Expr::Try(inner) => notify_call(&inner.expr),
        syn::Expr::Await(inner) => match &*inner.base {
            syn::Expr::MethodCall(call) if call.method == "notify_logging_message" => Some(call),
            _ => None,
        },
        syn::Expr::MethodCall(call)
            if matches!(
                call.method.to_string().as_str(),
                "ok" | "unwrap" | "expect" | "map_err"
            ) =>
        {
            notify_call(&call.receiver)
        }
        _ => None,
    }
}

/// The level, data and logger of a `LoggingMessageNotificationParam` built in place.
struct LogParam<'a> {
    level: &'a syn::Expr,
    data: &'a syn::Expr,
    logger: Option<&'a syn::Expr>,
}

impl<'a> LogParam<'a> {
    fn from_expr(expr: &'a syn::Expr) -> Option<Self> {
        match expr {
            // `LoggingMessageNotificationParam::new(level, data)`
            syn::Expr::Call(call) => {
                let syn::Expr::Path(func) = &*call.func else {
                    return None;
                };
                let mut segments = func.path.segments.iter().rev();
                let (new, ty) = (segments.next()?, segments.next()?);
                if new.ident != "new" || ty.ident != "LoggingMessageNotificationParam" {
                    return None;
                }
                let [level, data] = call.args.iter().collect::<Vec<_>>()[..] else {
                    return None;
                };
                Some(LogParam {
                    level,
                    data,
                    logger: None,
                })
            }
            // `.with_logger(name)`
            syn::Expr::MethodCall(call) if call.method == "with_logger" && call.args.len() == 1 => {
                let mut param = LogParam::from_expr(&call.receiver)?;
                param.logger = call.args.first();
                Some(param)
            }
            // `LoggingMessageNotificationParam { level, logger, data }`
            syn::Expr::Struct(literal)
                if literal
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "LoggingMessageNotificationParam") =>
            {
                let field = |name: &str| {
                    literal.fields.iter().find_map(|field| match &field.member {
                        syn::Member::Named(ident) if ident == name => Some(&field.expr),
                        _ => None,
                    })
                };
                let logger = field("logger");
                // A struct literal's `logger` is an `Option`: logged with `?`.
                if logger
                    .is_some_and(|l| !matches!(l, syn::Expr::Path(p) if p.path.is_ident("None")))
                {
                    return None;
                }
                Some(LogParam {
                    level: field("level")?,
                    data: field("data")?,
                    logger: None,
                })
            }
            _ => None,
        }
    }
}

/// The `tracing` macro for a `LoggingLevel::X` path.
fn tracing_level(level: &syn::Expr) -> Option<&'static str> {
    let syn::Expr::Path(path) = level else {
        return None;
    };
    Some(
        match path.path.segments.last()?.ident.to_string().as_str() {
            "Debug" => "debug",
            "Info" | "Notice" => "info",
            "Warning" => "warn",
            "Error" | "Critical" | "Alert" | "Emergency" => "error",
            _ => return None,
        },
    )
}

/// A logger name as a `tracing` field value: a literal as it is, anything else through `%`.
fn field_value(text: &str) -> String {
    if text.starts_with('"') {
        text.to_owned()
    } else {
        format!("%{text}")
    }
}

/// The expression that follows `"key":` anywhere in `tokens` (e.g. inside `json!({..})`), up
/// to the next `,` of its level.
pub(crate) fn value_after_key(tokens: TokenStream, key: &str) -> Option<syn::Expr> {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (index, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Group(group) => {
                if let Some(found) = value_after_key(group.stream(), key) {
                    return Some(found);
                }
            }
            TokenTree::Literal(literal) => {
                let is_key = syn::parse_str::<syn::LitStr>(&literal.to_string())
                    .is_ok_and(|lit| lit.value() == key);
                let colon =
                    matches!(trees.get(index + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                if is_key && colon {
                    let value: TokenStream = trees[index + 2..]
                        .iter()
                        .take_while(|t| !matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
                        .cloned()
                        .collect();
                    return syn::parse2(value).ok();
                }
            }
            _ => {}
        }
    }
    None
}
