//! The legacy request calls a scaffold replaces, and for each the MRTR input request built from
//! the call's own arguments and the conversion of the client's answer back to the legacy call's
//! result type.

use proc_macro2::TokenStream;
use quote::quote;

pub mod custom;

/// The kind (used in the key) of a legacy request method.
pub fn kind(method: &str) -> Option<&'static str> {
    Some(match method {
        "create_elicitation"
        | "create_elicitation_with_timeout"
        | "elicit"
        | "elicit_with_timeout"
        | "elicit_url"
        | "elicit_url_with_timeout" => "elicitation",
        "create_message" => "sampling",
        "list_roots" => "roots",
        _ => return None,
    })
}

/// Whether `tokens` call one of the requests (`name(..)` or `name::<T>(..)`).
pub fn calls_a_request(tokens: TokenStream) -> bool {
    let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
    trees.iter().enumerate().any(|(index, tree)| match tree {
        proc_macro2::TokenTree::Ident(ident) => {
            kind(&ident.to_string()).is_some()
                && index > 0
                && matches!(&trees[index - 1], proc_macro2::TokenTree::Punct(p) if p.as_char() == '.')
        }
        proc_macro2::TokenTree::Group(group) => calls_a_request(group.stream()),
        _ => false,
    })
}

/// Whether `tokens` send a legacy request by hand: `.send_request(..)` in code that names
/// `ServerRequest` (the request built there, or earlier into a binding).
pub fn sends_a_server_request(tokens: TokenStream) -> bool {
    fn scan(tokens: TokenStream, sends: &mut bool, names: &mut bool) {
        let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        for (index, tree) in trees.iter().enumerate() {
            match tree {
                proc_macro2::TokenTree::Ident(ident) if ident == "ServerRequest" => *names = true,
                proc_macro2::TokenTree::Ident(ident) if ident == "send_request" => {
                    *sends |= index > 0
                        && matches!(&trees[index - 1], proc_macro2::TokenTree::Punct(p) if p.as_char() == '.');
                }
                proc_macro2::TokenTree::Group(group) => scan(group.stream(), sends, names),
                _ => {}
            }
        }
    }
    let (mut sends, mut names) = (false, false);
    scan(tokens, &mut sends, &mut names);
    sends && names
}

/// Whether `tokens` name `CustomRequest`: a request by method name, with no MRTR form.
pub fn names_a_custom_request(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|tree| match tree {
        proc_macro2::TokenTree::Ident(ident) => ident == "CustomRequest",
        proc_macro2::TokenTree::Group(group) => names_a_custom_request(group.stream()),
        _ => false,
    })
}

/// One input request of a round.
pub struct Asked {
    pub key: String,
    pub kind: &'static str,
    /// The `rmcp::model::InputRequest` expression.
    pub request: TokenStream,
    /// The legacy call's result, from the answer bound to the binding given to [`build`].
    pub answer: TokenStream,
}

/// Why a request call cannot become an input request.
pub enum NotBuilt {
    /// Not one of the request methods (or not their argument shape).
    NotARequest,
    /// `elicit` without its type: the form schema is unknown.
    Untyped,
    /// `send_request(ServerRequest::CustomRequest(..))` whose method is not a string literal:
    /// which input request it stands for is known only when it runs.
    Custom,
}

/// The input request of `call` under `key`, answered through `binding`. `bound`: what the
/// request argument of `send_request(NAME)` was bound to (`let NAME = ..;`), if anything.
pub fn build(
    call: &syn::ExprMethodCall,
    key: impl FnOnce(&'static str) -> String,
    binding: &syn::Ident,
    bound: Option<&syn::Expr>,
) -> Result<Asked, NotBuilt> {
    let method = call.method.to_string();
    if method == "send_request" {
        // A `ServerRequest` sent by hand: turned into its input request when the round ends,
        // the answer back into the `ClientResult` of the same kind.
        let request = call.args.first().ok_or(NotBuilt::NotARequest)?;
        let source = bound.unwrap_or(request);
        if names_a_custom_request(quote!(#source)) {
            return custom::build(request, source, key, binding);
        }
        if let Some(asked) = custom::variant(request, binding) {
            let (kind, request, answer) = asked;
            return Ok(Asked {
                key: key(kind),
                kind,
                request,
                answer,
            });
        }
        return Ok(Asked {
            key: key("request"),
            kind: "request",
            request: quote!(mrtr::input_request(#request)?),
            answer: quote!(mrtr::client_result(&#request, #binding)),
        });
    }
    let kind = kind(&method).ok_or(NotBuilt::NotARequest)?;
    let args: Vec<&syn::Expr> = call.args.iter().collect();
    let arg = |index: usize| args.get(index).copied().ok_or(NotBuilt::NotARequest);
    let typed = call
        .turbofish
        .as_ref()
        .and_then(|turbofish| turbofish.args.first())
        .cloned();
    let (request, answer) = match method.as_str() {
        "create_elicitation" | "create_elicitation_with_timeout" => {
            let params = arg(0)?;
            (
                quote!(rmcp::model::InputRequest::Elicitation(rmcp::model::ElicitRequest::new(#params))),
                quote!(mrtr::elicitation(#binding)),
            )
        }
        "elicit" | "elicit_with_timeout" => {
            let message_text = into_string(arg(0)?);
            let ty = typed.ok_or(NotBuilt::Untyped)?;
            (
                quote!(rmcp::model::InputRequest::Elicitation(rmcp::model::ElicitRequest::new(
                    rmcp::model::ElicitRequestParams::FormElicitationParams {
                        meta: None,
                        message: #message_text,
                        requested_schema: mrtr::schema_of::<#ty>()?,
                    }
                ))),
                quote!(mrtr::elicit::<#ty>(#binding)),
            )
        }
        "elicit_url" | "elicit_url_with_timeout" => {
            let (message, url, id) = (into_string(arg(0)?), arg(1)?, into_string(arg(2)?));
            (
                quote!(rmcp::model::InputRequest::Elicitation(rmcp::model::ElicitRequest::new(
                    rmcp::model::ElicitRequestParams::UrlElicitationParams {
                        meta: None,
                        message: #message,
                        url: (#url).to_string(),
                        elicitation_id: #id,
                    }
                ))),
                quote!(mrtr::url_elicitation(#binding)),
            )
        }
        "create_message" => {
            let params = arg(0)?;
            (
                quote!(rmcp::model::InputRequest::CreateMessage(rmcp::model::CreateMessageRequest::new(#params))),
                quote!(mrtr::sampling(#binding)),
            )
        }
        _ => (
            // mcp-lint: allow(deprecated-roots) the scaffold asks for roots the way the legacy call did, now as an MRTR input request
            quote!(rmcp::model::InputRequest::ListRoots(
                rmcp::model::ListRootsRequest::default()
            )),
            quote!(mrtr::roots(#binding)),
        ),
    };
    Ok(Asked {
        key: key(kind),
        kind,
        request,
        answer,
    })
}

/// `(EXPR).into()`, without the parentheses where they are not needed.
fn into_string(expr: &syn::Expr) -> TokenStream {
    match expr {
        syn::Expr::Lit(_)
        | syn::Expr::Path(_)
        | syn::Expr::Call(_)
        | syn::Expr::MethodCall(_)
        | syn::Expr::Macro(_)
        | syn::Expr::Field(_) => quote!(#expr.into()),
        _ => quote!((#expr).into()),
    }
}
