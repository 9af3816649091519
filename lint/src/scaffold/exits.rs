//! Every way out of a handler (its `return`s and its tail) as a complete MRTR response, in the
//! handler's own output type; and the output schema a `Json<T>` return type gave a tool.

use quote::quote;
use syn::visit_mut::VisitMut;

fn result_args(output: &syn::ReturnType) -> Option<Vec<&syn::Type>> {
    let syn::ReturnType::Type(_, ty) = output else {
        return None;
    };
    let syn::Type::Path(path) = &**ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let types: Vec<&syn::Type> = args
        .args
        .iter()
        .filter_map(|arg| match arg {
            syn::GenericArgument::Type(ty) => Some(ty),
            _ => None,
        })
        .collect();
    (types.len() == 2).then_some(types)
}

pub fn result_error_type(output: &syn::ReturnType) -> syn::Type {
    result_args(output)
        .map(|types| types[1].clone())
        .unwrap_or_else(|| syn::parse_quote!(rmcp::ErrorData))
}

/// What the legacy handler returns.
#[derive(Clone)]
pub enum Output {
    /// `Result<T, E>`: each way out is `mrtr::complete(..)`.
    Result(syn::Type),
    /// Any other `IntoCallToolResult` (`String`, `CallToolResult`, `Json<T>`, ...): each way out
    /// is `mrtr::done(..)`, the value wrapped as the complete result.
    Value(syn::Type),
    /// `Result<T, E>` of a `ServerHandler` method: each way out is `mrtr::respond(..)`, `T`
    /// turned into the method's MRTR response (`GetPromptResult` → `GetPromptResponse`, ...).
    Respond(syn::Type),
    /// A helper's own type `T` (`()` when it returns nothing), now `Result<T, mrtr::Interrupt>`:
    /// each way out is `Ok(..)`.
    Helper(syn::Type),
}

impl Output {
    pub fn of(output: &syn::ReturnType) -> Option<Self> {
        if let Some(types) = result_args(output) {
            return Some(Output::Result(types[0].clone()));
        }
        match output {
            syn::ReturnType::Type(_, ty) if !matches!(&**ty, syn::Type::Tuple(t) if t.elems.is_empty()) => {
                Some(Output::Value((**ty).clone()))
            }
            _ => None,
        }
    }

    /// The tool's own value type (`T` of `Result<T, E>`, or the return type).
    pub fn value_type(&self) -> &syn::Type {
        match self {
            Output::Result(ty) | Output::Value(ty) | Output::Respond(ty) | Output::Helper(ty) => ty,
        }
    }

    /// `EXPR` as a complete response: `mrtr::complete(EXPR)` for a `Result` (with the `Ok`
    /// type spelled out for `Err(..)`, whose `Ok` type nothing else pins down), `mrtr::done::<T>
    /// (EXPR)` for a value (its type spelled out for `.into()` and the like).
    pub fn complete(&self, expr: &syn::Expr) -> syn::Expr {
        match self {
            Output::Result(ok_type) => {
                let is_err = matches!(expr, syn::Expr::Call(call)
                    if matches!(&*call.func, syn::Expr::Path(path) if path.path.is_ident("Err")));
                if is_err && !matches!(ok_type, syn::Type::ImplTrait(_)) {
                    syn::parse_quote!(mrtr::complete::<#ok_type>(#expr))
                } else {
                    syn::parse_quote!(mrtr::complete(#expr))
                }
            }
            Output::Helper(_) => syn::parse_quote!(Ok(#expr)),
            Output::Respond(ok_type) => syn::parse_quote!(mrtr::respond::<#ok_type, _, _>(#expr)),
            Output::Value(syn::Type::ImplTrait(_)) => syn::parse_quote!(mrtr::done(#expr)),
            Output::Value(ty) => syn::parse_quote!(mrtr::done::<#ty>(#expr)),
        }
    }
}

/// `T` of `Json<T>` (any path ending in `Json`).
pub fn json_inner_type(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "Json" {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(args) => match args.args.first()? {
            syn::GenericArgument::Type(inner) => Some(inner),
            _ => None,
        },
        _ => None,
    }
}

/// Adds `output_schema = schema_for_output::<T>()` to the handler's `#[tool(..)]` (rmcp derives
/// it from a `Json<T>` return type, which the MRTR handler no longer has), unless it names one.
pub fn keep_output_schema(attrs: &mut [syn::Attribute], structured: &syn::Type) {
    let schema =
        quote!(output_schema = rmcp::handler::server::tool::schema_for_output::<#structured>());
    for attr in attrs {
        if attr
            .path()
            .segments
            .last()
            .is_none_or(|s| s.ident != "tool")
        {
            continue;
        }
        match &mut attr.meta {
            syn::Meta::Path(path) => {
                let path = path.clone();
                *attr = syn::parse_quote!(#[#path(#schema)]);
            }
            syn::Meta::List(list) => {
                let names_one = list.tokens.clone().into_iter().any(|tree| {
                    matches!(tree, proc_macro2::TokenTree::Ident(ident) if ident == "output_schema")
                });
                if !names_one {
                    let tokens = &list.tokens;
                    list.tokens = if tokens.is_empty() {
                        schema.clone()
                    } else {
                        quote!(#tokens, #schema)
                    };
                }
            }
            syn::Meta::NameValue(_) => {}
        }
    }
}

/// `return EXPR` → `return mrtr::complete(EXPR)`, outside closures, async blocks and items.
pub struct Returns<'a> {
    pub output: &'a Output,
}

impl VisitMut for Returns<'_> {
    fn visit_expr_return_mut(&mut self, node: &mut syn::ExprReturn) {
        if let Some(expr) = &mut node.expr {
            self.visit_expr_mut(expr);
            **expr = self.output.complete(expr);
        } else if matches!(self.output, Output::Helper(_)) {
            node.expr = Some(Box::new(syn::parse_quote!(Ok(()))));
        }
    }

    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}

    fn visit_expr_async_mut(&mut self, _: &mut syn::ExprAsync) {}

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}
