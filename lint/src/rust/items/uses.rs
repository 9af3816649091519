//! The `use` items without a trigger word (see [`super`]), decided once everything else is: a
//! `use` matters to the walk only through the names it brings into scope (a path in kept code
//! resolves through them), so one whose names nothing kept spells is blanked. Kept whatever their
//! names: glob imports (`use rmcp::model::*;` makes unresolved names the SDK's) and one-segment
//! imports (`use rmcp as mcp;` adds a name for the SDK).

use rustc_hash::FxHashSet as HashSet;

use ra_ap_rustc_lexer::TokenKind;

use super::blank::{blank_range, Blanking};
use super::split::Tokens;

/// Blanks the `use` items of `blanking.uses` that bring no name in `needed` into scope.
pub(super) fn prune_uses(tokens: &Tokens<'_>, blanking: &mut Blanking, needed: &HashSet<&str>) {
    for &(first, last) in &blanking.uses {
        if !brings_needed_name(tokens, first, last, needed) {
            let start = tokens.list[first].start;
            let end = tokens.list[last].end;
            blank_range(tokens.text, start, end, &mut blanking.blanked);
        }
    }
}

/// Whether the `use` item of the tokens `first..=last` is a glob, has one segment, or names (as a
/// leaf or an alias) something in `needed`. `use a::b::{self}` names `b`: any of its words counts.
fn brings_needed_name(
    tokens: &Tokens<'_>,
    first: usize,
    last: usize,
    needed: &HashSet<&str>,
) -> bool {
    let list = &tokens.list[first..=last];
    let mut paths = false;
    for (index, token) in list.iter().enumerate() {
        match token.kind {
            TokenKind::Star => return true,
            TokenKind::Colon => paths = true,
            TokenKind::Ident | TokenKind::RawIdent => {
                let Some(name) = tokens.name(token) else {
                    continue;
                };
                let leaf = list.get(index + 1).is_some_and(|next| {
                    matches!(
                        next.kind,
                        TokenKind::Comma | TokenKind::CloseBrace | TokenKind::Semi
                    )
                });
                if !leaf || name == "_" {
                    continue;
                }
                if name == "self" {
                    if list
                        .iter()
                        .filter_map(|token| tokens.name(token))
                        .any(|word| needed.contains(word))
                    {
                        return true;
                    }
                } else if needed.contains(name) {
                    return true;
                }
            }
            _ => {}
        }
    }
    !paths
}
