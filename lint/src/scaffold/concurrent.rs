//! The bodies of `join!` and `select!` (tokio's and the `futures` crate's), parsed so that the
//! input requests they start can be asked in one round (`join!`) or the branch a request answers
//! can be kept (`select!`).

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::Token;

/// Which concurrency macro a macro call is, by the last segment of its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    Join,
    Select,
}

pub fn concurrency(mac: &syn::Macro) -> Option<Concurrency> {
    match mac.path.segments.last()?.ident.to_string().as_str() {
        "join" => Some(Concurrency::Join),
        "select" => Some(Concurrency::Select),
        _ => None,
    }
}

/// The futures of `join!(a, b, ..)`.
pub fn join_futures(mac: &syn::Macro) -> Option<Vec<syn::Expr>> {
    mac.parse_body_with(Punctuated::<syn::Expr, Token![,]>::parse_terminated)
        .ok()
        .map(|futures| futures.into_iter().collect())
}

/// One `PATTERN = FUTURE (, if CONDITION)? => HANDLER` branch of `select!`.
pub struct Branch {
    pub pattern: syn::Pat,
    pub future: syn::Expr,
    pub handler: syn::Expr,
}

/// The branches of a `select!` (`biased;` and the `else` branch are accepted and dropped: a
/// select whose request branch is kept has no other branch left to wait for).
pub struct Select {
    pub branches: Vec<Branch>,
}

impl Parse for Select {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(syn::Ident) && input.fork().parse::<syn::Ident>()? == "biased" {
            input.parse::<syn::Ident>()?;
            input.parse::<Token![;]>()?;
        }
        let mut branches = Vec::new();
        while !input.is_empty() {
            if input.peek(Token![else]) {
                input.parse::<Token![else]>()?;
                input.parse::<Token![=>]>()?;
                input.parse::<syn::Expr>()?;
                input.parse::<Option<Token![,]>>()?;
                continue;
            }
            let pattern = syn::Pat::parse_single(input)?;
            input.parse::<Token![=]>()?;
            let future = input.parse::<syn::Expr>()?;
            if input.peek(Token![,]) {
                input.parse::<Token![,]>()?;
                input.parse::<Token![if]>()?;
                input.parse::<syn::Expr>()?;
            }
            input.parse::<Token![=>]>()?;
            let handler = input.parse::<syn::Expr>()?;
            input.parse::<Option<Token![,]>>()?;
            branches.push(Branch {
                pattern,
                future,
                handler,
            });
        }
        Ok(Select { branches })
    }
}

pub fn select_branches(mac: &syn::Macro) -> Option<Select> {
    mac.parse_body::<Select>().ok()
}
