//! `peer.send_request(ServerRequest::CustomRequest(CustomRequest::new(METHOD, params)))`: a
//! legacy request built from its method name. When `METHOD` is a string literal naming one of
//! the legacy server-to-client requests (`sampling/createMessage`, `elicitation/create`,
//! `roots/list`), it becomes the typed input request of that kind, its params decoded into the
//! request's params (`mrtr::custom_params`), and the answer the `ClientResult` the legacy call
//! returned. Another literal is not a legacy request; a method that is not a literal is known
//! only when the code runs, and is refused. A typed `ServerRequest` variant sent as it is built
//! becomes its typed input request the same way ([`variant`]).

use proc_macro2::TokenStream;
use quote::quote;
use syn::visit::Visit;

use super::{Asked, NotBuilt};

/// The input request of the custom request `request` (written `source` where it was built:
/// itself, or what its binding was bound to), answered through `binding`.
pub fn build(
    request: &syn::Expr,
    source: &syn::Expr,
    key: impl FnOnce(&'static str) -> String,
    binding: &syn::Ident,
) -> Result<Asked, NotBuilt> {
    let kind = kind(source)?;
    let (typed, answer): (TokenStream, TokenStream) = match kind {
        "sampling" => (
            quote!(rmcp::model::InputRequest::CreateMessage(
                rmcp::model::CreateMessageRequest::new(mrtr::custom_params(#request)?)
            )),
            quote!(mrtr::sampling(#binding).map(rmcp::model::ClientResult::from)),
        ),
        "elicitation" => (
            quote!(rmcp::model::InputRequest::Elicitation(
                rmcp::model::ElicitRequest::new(mrtr::custom_params(#request)?)
            )),
            quote!(mrtr::elicitation(#binding).map(rmcp::model::ClientResult::from)),
        ),
        _ => (
            // mcp-lint: allow(deprecated-roots) the scaffold asks for roots the way the legacy call did, now as an MRTR input request
            quote!(rmcp::model::InputRequest::ListRoots(
                rmcp::model::ListRootsRequest::default()
            )),
            quote!(mrtr::roots(#binding).map(rmcp::model::ClientResult::from)),
        ),
    };
    Ok(Asked {
        key: key(kind),
        kind,
        request: typed,
        answer,
    })
}

/// `ServerRequest::ElicitRequest(P.into())` (or `CreateMessageRequest`, `ListRootsRequest`,
/// also with the request itself rather than `P.into()`) sent as it is built: the typed input
/// request of that kind (rmcp 3's requests no longer convert from their params), and the answer
/// as the `ClientResult` the legacy call returned. `(kind, input request, answer)`.
pub fn variant(
    request: &syn::Expr,
    binding: &syn::Ident,
) -> Option<(&'static str, TokenStream, TokenStream)> {
    let syn::Expr::Call(call) = request else {
        return None;
    };
    let syn::Expr::Path(path) = &*call.func else {
        return None;
    };
    let segments = crate::rust::imports::segment_names(&path.path);
    let [.., enum_name, variant] = segments.as_slice() else {
        return None;
    };
    if enum_name != "ServerRequest" || call.args.len() != 1 {
        return None;
    }
    let inner = &call.args[0];
    // `P.into()`: the request built from its params.
    let params = match inner {
        syn::Expr::MethodCall(into) if into.method == "into" && into.args.is_empty() => {
            Some(&*into.receiver)
        }
        _ => None,
    };
    let built = |ty: TokenStream| match params {
        Some(params) => quote!(rmcp::model::#ty::new(#params)),
        None => quote!(#inner),
    };
    Some(match variant.as_str() {
        "CreateMessageRequest" => {
            let built = built(quote!(CreateMessageRequest));
            (
                "sampling",
                quote!(rmcp::model::InputRequest::CreateMessage(#built)),
                quote!(mrtr::sampling(#binding).map(rmcp::model::ClientResult::from)),
            )
        }
        "ElicitRequest" => {
            let built = built(quote!(ElicitRequest));
            (
                "elicitation",
                quote!(rmcp::model::InputRequest::Elicitation(#built)),
                quote!(mrtr::elicitation(#binding).map(rmcp::model::ClientResult::from)),
            )
        }
        "ListRootsRequest" => (
            "roots",
            // mcp-lint: allow(deprecated-roots) the scaffold asks for roots the way the legacy call did, now as an MRTR input request
            quote!(rmcp::model::InputRequest::ListRoots(
                rmcp::model::ListRootsRequest::default()
            )),
            quote!(mrtr::roots(#binding).map(rmcp::model::ClientResult::from)),
        ),
        _ => return None,
    })
}

/// The kind of the legacy request `source` builds by method name: from the method argument of
/// `CustomRequest::new(METHOD, ..)` or the `method` field of a `CustomRequest { .. }` literal.
fn kind(source: &syn::Expr) -> Result<&'static str, NotBuilt> {
    let mut finder = Method::default();
    finder.visit_expr(source);
    let Some(method) = finder.method else {
        return Err(NotBuilt::Custom);
    };
    let syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(literal),
        ..
    }) = as_written(&method)
    else {
        return Err(NotBuilt::Custom);
    };
    match literal.value().as_str() {
        "sampling/createMessage" => Ok("sampling"),
        "elicitation/create" => Ok("elicitation"),
        "roots/list" => Ok("roots"),
        // A request of the application's own: not a legacy one.
        _ => Err(NotBuilt::NotARequest),
    }
}

/// `EXPR` of `EXPR.into()`, `EXPR.to_string()`, `EXPR.to_owned()`, `String::from(EXPR)`.
fn as_written(expr: &syn::Expr) -> &syn::Expr {
    match expr {
        syn::Expr::MethodCall(call)
            if call.args.is_empty()
                && matches!(
                    call.method.to_string().as_str(),
                    "into" | "to_string" | "to_owned"
                ) =>
        {
            as_written(&call.receiver)
        }
        syn::Expr::Call(call) if call.args.len() == 1 => match &*call.func {
            syn::Expr::Path(path)
                if quote!(#path).to_string().replace(' ', "") == "String::from" =>
            {
                as_written(&call.args[0])
            }
            _ => expr,
        },
        syn::Expr::Paren(paren) => as_written(&paren.expr),
        _ => expr,
    }
}

/// What each `let NAME = ..;` of `block` that builds a `CustomRequest` binds `NAME` to.
pub fn bindings(block: &syn::Block) -> std::collections::BTreeMap<String, syn::Expr> {
    #[derive(Default)]
    struct Lets(std::collections::BTreeMap<String, syn::Expr>);
    impl<'ast> Visit<'ast> for Lets {
        fn visit_local(&mut self, node: &'ast syn::Local) {
            let pat = match &node.pat {
                syn::Pat::Type(typed) => &*typed.pat,
                other => other,
            };
            if let (syn::Pat::Ident(name), Some(init)) = (pat, &node.init) {
                let expr = &init.expr;
                if super::names_a_custom_request(quote!(#expr)) {
                    self.0.insert(name.ident.to_string(), (*init.expr).clone());
                }
            }
            syn::visit::visit_local(self, node);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut lets = Lets::default();
    lets.visit_block(block);
    lets.0
}

/// The method expression of the first `CustomRequest` built in an expression.
#[derive(Default)]
struct Method {
    method: Option<syn::Expr>,
}

impl<'ast> Visit<'ast> for Method {
    fn visit_expr_call(&mut self, node: &'ast syn::ExprCall) {
        if self.method.is_none() {
            if let syn::Expr::Path(path) = &*node.func {
                let segments = crate::rust::imports::segment_names(&path.path);
                if segments.ends_with(&["CustomRequest".to_owned(), "new".to_owned()]) {
                    self.method = node.args.first().cloned();
                    return;
                }
            }
        }
        syn::visit::visit_expr_call(self, node);
    }

    fn visit_expr_struct(&mut self, node: &'ast syn::ExprStruct) {
        let named = node
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == "CustomRequest");
        if named && self.method.is_none() {
            self.method = node
                .fields
                .iter()
                .find(|field| matches!(&field.member, syn::Member::Named(name) if name == "method"))
                .map(|field| field.expr.clone());
            return;
        }
        syn::visit::visit_expr_struct(self, node);
    }
}
