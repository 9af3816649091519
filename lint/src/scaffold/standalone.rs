//! A scaffold file made compilable on its own: the scaffolds of a source file plus the items of
//! that file they use (types, helper functions, `elicit_safe!` lines, the `use` lines that name
//! what they reference). The compile test builds one crate of such modules against rmcp 3.

use std::collections::BTreeSet;

use proc_macro2::{TokenStream, TokenTree};
use quote::{quote, ToTokens};

use super::Scaffold;

/// The module text: `use ::rmcp as ALIAS;` for each name the file reaches rmcp by, the `use`
/// lines and top-level items the scaffolds reach (transitively, by name), the scaffolds and the
/// `mrtr` support module.
pub fn module(
    source: &str,
    scaffolds: &[Scaffold],
    sdk_aliases: &[&str],
) -> Result<String, String> {
    let syntax = syn::parse_file(source).map_err(|error| error.to_string())?;
    let mut names = BTreeSet::new();
    idents(super::items(scaffolds), &mut names);

    // Items reached by name, to a fixed point.
    // The legacy forms of the helpers the scaffolds rewrite are replaced, never included.
    let replaced = super::rewritten_helpers(scaffolds);
    let mut included: Vec<bool> = syntax.items.iter().map(|_| false).collect();
    let skip: Vec<bool> = syntax
        .items
        .iter()
        .map(|item| item_name(item).is_some_and(|name| replaced.contains(&name)))
        .collect();
    loop {
        let mut grew = false;
        for (index, item) in syntax.items.iter().enumerate() {
            if included[index] || skip[index] {
                continue;
            }
            let reached = match item_name(item) {
                Some(name) => names.contains(&name),
                // `elicit_safe!(UserName, ..)`-like lines: when they name an included type.
                None => {
                    matches!(item, syn::Item::Macro(m) if m.ident.is_none()) && {
                        let mut inner = BTreeSet::new();
                        idents(item.to_token_stream(), &mut inner);
                        syntax.items.iter().zip(&included).any(|(other, on)| {
                            *on && item_name(other).is_some_and(|name| inner.contains(&name))
                        })
                    }
                }
            };
            if reached {
                included[index] = true;
                idents(item.to_token_stream(), &mut names);
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }

    let aliases = sdk_aliases
        .iter()
        .filter(|alias| **alias != "rmcp")
        .map(|alias| syn::Ident::new(alias, proc_macro2::Span::call_site()));
    let uses = syntax
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Use(item) => Some(item),
            _ => None,
        })
        .flat_map(|item| {
            let mut paths = Vec::new();
            flatten(&item.tree, &mut Vec::new(), &mut paths);
            paths
        })
        .filter(|(leaf, _)| leaf != "rmcp" && leaf != "*" && names.contains(leaf))
        .map(|(_, path)| path);
    let items = syntax
        .items
        .iter()
        .zip(&included)
        .filter(|(_, on)| **on)
        .map(|(item, _)| item);
    let scaffold_items = super::items(scaffolds);
    let support = super::support::module();
    let imports = super::imports();
    let file: syn::File = syn::parse2(quote! {
        #imports
        #(use ::rmcp as #aliases;)*
        #(use #uses;)*
        #(#items)*
        #scaffold_items
        #support
    })
    .map_err(|error| error.to_string())?;
    Ok(prettyplease::unparse(&file))
}

/// `rmcp::model` names of older releases and their rmcp 3 equivalents (rmcp 2's
/// `CreateElicitationRequestParams` was an alias of `ElicitRequestParams`).
const RENAMED: &[(&str, &str)] = &[
    ("Content", "ContentBlock"),
    ("CreateElicitationRequestParams", "ElicitRequestParams"),
];

fn item_name(item: &syn::Item) -> Option<String> {
    Some(match item {
        syn::Item::Fn(item) => item.sig.ident.to_string(),
        syn::Item::Struct(item) => item.ident.to_string(),
        syn::Item::Enum(item) => item.ident.to_string(),
        syn::Item::Type(item) => item.ident.to_string(),
        syn::Item::Const(item) => item.ident.to_string(),
        syn::Item::Static(item) => item.ident.to_string(),
        syn::Item::Trait(item) => item.ident.to_string(),
        syn::Item::Macro(item) => item.ident.as_ref()?.to_string(),
        _ => return None,
    })
}

fn idents(tokens: TokenStream, out: &mut BTreeSet<String>) {
    for tree in tokens {
        match tree {
            TokenTree::Ident(ident) => {
                out.insert(ident.to_string());
            }
            TokenTree::Group(group) => idents(group.stream(), out),
            _ => {}
        }
    }
}

/// Each leaf of a use tree: (the name it brings into scope, its full path as a use tree).
fn flatten(
    tree: &syn::UseTree,
    prefix: &mut Vec<syn::Ident>,
    out: &mut Vec<(String, TokenStream)>,
) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.clone());
            flatten(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            let ident = &name.ident;
            let renamed = RENAMED
                .iter()
                .find(|(old, _)| ident == old)
                .filter(|_| prefix.last().is_some_and(|module| module == "model"));
            match renamed {
                // A name rmcp 3 no longer has, imported under its old name.
                Some((_, new)) => {
                    let new = syn::Ident::new(new, ident.span());
                    out.push((ident.to_string(), quote!(#(#prefix::)* #new as #ident)));
                }
                None => out.push((ident.to_string(), quote!(#(#prefix::)* #ident))),
            }
        }
        syn::UseTree::Rename(rename) => {
            let (ident, alias) = (&rename.ident, &rename.rename);
            out.push((alias.to_string(), quote!(#(#prefix::)* #ident as #alias)));
        }
        syn::UseTree::Glob(_) => out.push(("*".to_owned(), TokenStream::new())),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                flatten(tree, prefix, out);
            }
        }
    }
}
