//! What kind of handler a method is: a `#[tool]` (rmcp 3's `InputResponses` / `RequestState`
//! extractors, `CallToolResponse`), a `ServerHandler` method that may answer `input_required`
//! (`get_prompt`, `read_resource`, `call_tool`: the request parameters carry the round's inputs),
//! or neither.

use quote::format_ident;

use super::rewrite::Unsupported;

/// Where a handler's round inputs come from and what it answers.
pub enum Surface {
    /// A `#[tool]` method: rmcp 3's `InputResponses` and `RequestState` extractors, and a
    /// `CallToolResponse`.
    Tool,
    /// `ServerHandler::get_prompt` / `read_resource` / `call_tool`: the request parameters'
    /// `input_responses` and `request_state`, and the method's MRTR response type.
    Trait {
        params: syn::Ident,
        response: syn::Ident,
    },
}

/// The `ServerHandler` methods that may answer `input_required`, with their MRTR response type.
pub fn trait_response(method: &str) -> Option<&'static str> {
    Some(match method {
        "get_prompt" => "GetPromptResponse",
        "read_resource" => "ReadResourceResponse",
        "call_tool" => "CallToolResponse",
        _ => return None,
    })
}

/// Whether `function` carries `#[wanted]` (any path ending so).
pub fn attributed(function: &syn::ImplItemFn, wanted: &str) -> bool {
    function.attrs.iter().any(|attr| {
        attr.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == wanted)
    })
}

/// Whether `function` takes the call it answers: a `Peer<RoleServer>`, a `RequestContext` or
/// request parameters among its arguments (a peer reached through `self` was stored earlier).
pub fn takes_the_call(signature: &syn::Signature) -> bool {
    signature.inputs.iter().any(|input| match input {
        syn::FnArg::Typed(typed) => {
            let ty = quote::ToTokens::to_token_stream(&typed.ty).to_string();
            [
                "Peer",
                "RequestContext",
                "CallToolRequestParam",
                "GetPromptRequestParam",
                "ReadResourceRequestParam",
            ]
            .iter()
            .any(|name| ty.contains(name))
        }
        syn::FnArg::Receiver(_) => false,
    })
}

pub fn surface(function: &syn::ImplItemFn, in_trait: bool) -> Result<Surface, Unsupported> {
    let name = function.sig.ident.to_string();
    if attributed(function, "prompt") {
        return Err(Unsupported::PromptMacro(name));
    }
    let Some(response) = trait_response(&name).filter(|_| in_trait) else {
        return Ok(Surface::Tool);
    };
    let params = function.sig.inputs.iter().find_map(|input| match input {
        syn::FnArg::Typed(typed) => {
            let ty = quote::ToTokens::to_token_stream(&typed.ty).to_string();
            ty.contains("RequestParam").then_some((typed, ty))
        }
        syn::FnArg::Receiver(_) => None,
    });
    match params {
        Some((typed, _)) if matches!(&*typed.pat, syn::Pat::Ident(_)) => {
            let syn::Pat::Ident(binding) = &*typed.pat else {
                unreachable!("matched above")
            };
            Ok(Surface::Trait {
                params: binding.ident.clone(),
                response: format_ident!("{response}"),
            })
        }
        Some((_, ty)) => Err(Unsupported::UnnamedParams(name, ty)),
        None => Err(Unsupported::UnnamedParams(name, "..RequestParams".into())),
    }
}
