//! The `let` statements of the kept blocks (see [`super`]), decided once the whole file is
//! split: blanked, cut down to `let PATTERN;`, or kept whole.

use rustc_hash::FxHashSet as HashSet;

use ra_ap_rustc_lexer::TokenKind;

use super::blank::{blank_range, Blanking};
use super::split::{Token, Tokens};
use crate::rust::analyzer::{PEER_TYPES, STATE_MAKING_WORDS};
use crate::rust::shapes::is_sealing_name;

/// A `let` statement in a kept block: its tokens, and whether it may itself hold a finding.
pub(super) struct Let {
    pub(super) first: usize,
    /// The `let` keyword (after any attributes).
    pub(super) keyword: usize,
    /// The first token after the pattern (see [`pattern_end`]).
    pub(super) rest: usize,
    pub(super) last: usize,
    pub(super) may_match: bool,
}

/// Blanks the `let` statements that can matter to no finding, and cuts the others down to
/// `let PATTERN;` when what they bind cannot be a peer or a request state.
///
/// A binding matters to the analyzer only through its name (a peer, a request state), so a `let`
/// that binds no name a kept token spells is blanked whole (the names of a kept `let` count too,
/// until nothing changes). A `let` that binds such a name keeps its initialiser and type only when
/// they may make the binding a peer or a state, or the logging fix reads them: they name `peer`, a
/// peer type, `LoggingMessageNotificationParam`, a state-making call
/// (`to_string`, `encode`, `format!`, a sealing name), a string literal alone, or a name that a
/// relevant `let`, a peer-typed parameter or field, a closure parameter, an `if let`, `for` or
/// `match` arm pattern binds. Otherwise `let x = parse(input)?;` becomes `let x              ;`:
/// the name stays bound (shadowing an outer peer as before), as nothing the walk can use.
///
/// Returns the names that what is kept spells outside `use` items without a trigger word (for
/// [`super::uses`]).
pub(super) fn prune_lets<'t>(
    tokens: &Tokens<'t>,
    blanking: &mut Blanking,
    states: bool,
) -> HashSet<&'t str> {
    // The `let`s and the `use` items decided later: what they spell is not needed by itself.
    let mut skipped = vec![false; tokens.list.len()];
    let mut let_keyword = vec![false; tokens.list.len()];
    for binding in &blanking.lets {
        skipped[binding.first..=binding.last].fill(true);
        let_keyword[binding.keyword] = true;
    }
    for &(first, last) in &blanking.uses {
        skipped[first..=last].fill(true);
    }
    // Most of a file is blanked by now: the tokens left are found from the blanked ranges.
    let unblanked = unblanked(tokens, &blanking.blanked.ranges);
    debug_assert!(unblanked.iter().copied().eq((0..tokens.list.len())
        .filter(|&index| !blanked(blanking.blanked.bytes.as_deref(), &tokens.list[index]))));
    let mut needed: HashSet<&str> = HashSet::default();
    for &index in &unblanked {
        if !skipped[index] {
            needed.extend(tokens.name(&tokens.list[index]));
        }
    }
    if blanking.lets.is_empty() {
        return needed;
    }
    // Which `let`s may bind a peer or a state, whatever is needed: a fixpoint over their names.
    // What an initialiser spells by itself is decided once; only the names bound so far grow.
    let mut bound = bound_elsewhere(
        tokens,
        &let_keyword,
        blanking.blanked.bytes.as_deref(),
        &unblanked,
    );
    let mut relevant: Vec<bool> = blanking
        .lets
        .iter()
        .map(|binding| binding.may_match || initialiser_may_bind(tokens, binding, states))
        .collect();
    for (binding, _) in blanking.lets.iter().zip(&relevant).filter(|(_, r)| **r) {
        bound.extend(pattern_names(tokens, binding));
    }
    loop {
        let mut changed = false;
        for (binding, relevant) in blanking.lets.iter().zip(&mut relevant) {
            if *relevant || !initialiser_reads(tokens, binding, &bound) {
                continue;
            }
            *relevant = true;
            changed = true;
            bound.extend(pattern_names(tokens, binding));
        }
        if !changed {
            break;
        }
    }
    // Which are needed: a kept token spells what they bind.
    let mut kept = vec![false; blanking.lets.len()];
    loop {
        let mut changed = false;
        for ((binding, kept), relevant) in blanking.lets.iter().zip(&mut kept).zip(&relevant) {
            if *kept
                || !(binding.may_match
                    || pattern_names(tokens, binding).any(|name| needed.contains(name)))
            {
                continue;
            }
            *kept = true;
            changed = true;
            // A cut-down `let` reads nothing.
            if *relevant {
                for token in &tokens.list[binding.first..=binding.last] {
                    if !blanked(blanking.blanked.bytes.as_deref(), token) {
                        needed.extend(tokens.name(token));
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    for ((binding, kept), relevant) in blanking.lets.iter().zip(kept).zip(relevant) {
        let (start, end) = if !kept {
            (
                tokens.list[binding.first].start,
                tokens.list[binding.last].end,
            )
        } else if relevant {
            continue;
        } else {
            // `let PATTERN` and the `;`: the type, the initialiser and any `else` go.
            let rest = binding.rest;
            if rest >= binding.last || !matches!(tokens.list[binding.last].kind, TokenKind::Semi) {
                continue;
            }
            needed.extend(pattern_names(tokens, binding));
            (tokens.list[rest].start, tokens.list[binding.last].start)
        };
        blank_range(tokens.text, start, end, &mut blanking.blanked);
    }
    needed
}

/// The indices of the tokens that no range of `ranges` (blanked byte ranges, in any order)
/// holds the start of, in order: what [`blanked`] says of each token, without looking at each.
fn unblanked(tokens: &Tokens<'_>, ranges: &[(usize, usize)]) -> Vec<usize> {
    let list = &tokens.list;
    let mut ranges = ranges.to_vec();
    ranges.sort_unstable();
    let mut out = Vec::new();
    let mut index = 0;
    for (start, end) in ranges {
        let first_inside = index + list[index..].partition_point(|token| token.start < start);
        out.extend(index..first_inside);
        index = first_inside + list[first_inside..].partition_point(|token| token.start < end);
    }
    out.extend(index..list.len());
    out
}

/// Whether `token` was blanked in the copy (if any copy was made yet).
fn blanked(bytes: Option<&[u8]>, token: &Token) -> bool {
    bytes.is_some_and(|bytes| bytes[token.start] == b' ')
}

/// The names the type and initialiser of `binding` spell.
fn initialiser_names<'a, 't>(
    tokens: &'a Tokens<'t>,
    binding: &Let,
) -> impl Iterator<Item = &'t str> + 'a {
    tokens.list[binding.rest..=binding.last]
        .iter()
        .filter_map(|token| tokens.name(token))
}

/// Whether the type or initialiser of `binding` may by itself make its names a peer or, when
/// `states`, a request state (see [`initialiser_reads`] for what depends on other bindings).
fn initialiser_may_bind(tokens: &Tokens<'_>, binding: &Let, states: bool) -> bool {
    let rest = &tokens.list[binding.rest..=binding.last];
    let literal_alone = matches!(rest, [eq, literal, _]
        if matches!(eq.kind, TokenKind::Eq) && matches!(literal.kind, TokenKind::Literal { .. }));
    (states && literal_alone)
        || initialiser_names(tokens, binding).any(|name| {
            name == "peer"
                // The logging fix reads the binding a `notify_logging_message(param)` sends.
                || name == "LoggingMessageNotificationParam"
                || PEER_TYPES.contains(&name)
                || (states && (STATE_MAKING_WORDS.contains(&name) || is_sealing_name(name)))
        })
}

/// Whether the type or initialiser of `binding` reads a name that may be a peer or a state.
fn initialiser_reads(tokens: &Tokens<'_>, binding: &Let, bound: &HashSet<&str>) -> bool {
    initialiser_names(tokens, binding).any(|name| bound.contains(name))
}

/// Whether the `:` at `index` stands alone, not half of a `::` (the lexer gives two touching
/// colons): `p: ::rmcp::Peer<..>` has a single colon after `p`.
fn single_colon(list: &[Token], index: usize) -> bool {
    let touching = |other: Option<&Token>| {
        other.is_some_and(|token| {
            matches!(token.kind, TokenKind::Colon)
                && (token.end == list[index].start || token.start == list[index].end)
        })
    };
    !touching(index.checked_sub(1).map(|at| &list[at])) && !touching(list.get(index + 1))
}

/// The first token after the pattern of a `let` statement: its top-level `:` (not `::`) or `=`,
/// or the `;`.
pub(super) fn pattern_end(tokens: &Tokens<'_>, keyword: usize, last: usize) -> usize {
    let list = &tokens.list;
    let mut depth = 0usize;
    for index in keyword + 1..=last {
        match list[index].kind {
            TokenKind::OpenParen | TokenKind::OpenBracket | TokenKind::OpenBrace => depth += 1,
            TokenKind::CloseParen | TokenKind::CloseBracket | TokenKind::CloseBrace => {
                depth = depth.saturating_sub(1)
            }
            TokenKind::Eq | TokenKind::Semi if depth == 0 => return index,
            TokenKind::Colon if depth == 0 && single_colon(list, index) => return index,
            _ => {}
        }
    }
    last
}

/// The names that something other than a `let` statement may bind to a peer: parameters and
/// fields of a peer type (`peer: Peer<RoleServer>`, `client_peer: Arc<Mutex<Option<Peer<..>>>>`),
/// and, whatever their source, closure parameters and the patterns of `if let`, `while let`,
/// `for` and `match` arms. Over-approximate: more names only keep more `let`s whole.
fn bound_elsewhere<'t>(
    tokens: &Tokens<'t>,
    let_keyword: &[bool],
    blanked: Option<&[u8]>,
    unblanked: &[usize],
) -> HashSet<&'t str> {
    let list = &tokens.list;
    let kept = |token: &Token| !self::blanked(blanked, token);
    let mut bound = HashSet::default();
    let mut partners: Option<Vec<usize>> = None;
    let names = |range: std::ops::Range<usize>| {
        list[range]
            .iter()
            .filter(|token| kept(token))
            .filter_map(|token| tokens.name(token))
    };
    // The first top-level token from `from` that `stop` accepts, if one comes before the
    // enclosing group, a `;` or a `{` at the same level ends the search.
    let until = |from: usize, stop: &dyn Fn(&Token) -> bool| -> Option<usize> {
        let mut depth = 0usize;
        for (index, token) in list.iter().enumerate().skip(from) {
            if depth == 0 && stop(token) {
                return Some(index);
            }
            match token.kind {
                TokenKind::OpenBrace | TokenKind::Semi if depth == 0 => return None,
                TokenKind::OpenParen | TokenKind::OpenBracket | TokenKind::OpenBrace => depth += 1,
                TokenKind::CloseParen | TokenKind::CloseBracket | TokenKind::CloseBrace => {
                    depth = depth.checked_sub(1)?;
                }
                _ => {}
            }
        }
        None
    };
    for &index in unblanked {
        let token = &list[index];
        match token.kind {
            TokenKind::Ident => match tokens.word(token) {
                "let" if !let_keyword[index] => {
                    if let Some(end) = until(index + 1, &|t| matches!(t.kind, TokenKind::Eq)) {
                        bound.extend(names(index + 1..end));
                    }
                }
                "for" => {
                    if let Some(end) = until(index + 1, &|t| tokens.word(t) == "in") {
                        bound.extend(names(index + 1..end));
                    }
                }
                _ => {}
            },
            // `x: Peer<..>`: the type runs to the next top-level `,`, `)`, `=`, `;`, `{` or `|`.
            TokenKind::Colon if index > 0 && single_colon(list, index) => {
                let end = until(index + 1, &|t| {
                    matches!(
                        t.kind,
                        TokenKind::Comma
                            | TokenKind::Eq
                            | TokenKind::Semi
                            | TokenKind::OpenBrace
                            | TokenKind::Or
                    )
                });
                // A type that runs to the end of its group (`(peer: Peer<..>)`).
                let end = end.unwrap_or_else(|| {
                    (index + 1..list.len())
                        .find(|&at| {
                            matches!(
                                list[at].kind,
                                TokenKind::CloseParen | TokenKind::CloseBrace | TokenKind::Semi
                            )
                        })
                        .unwrap_or(list.len())
                });
                if names(index + 1..end).any(|name| PEER_TYPES.contains(&name)) {
                    bound.extend(tokens.name(&list[index - 1]));
                }
            }
            // A closure's parameters: a `|` that follows no operand opens them.
            TokenKind::Or => {
                let opens = index == 0
                    || match list[index - 1].kind {
                        TokenKind::Ident => {
                            matches!(tokens.word(&list[index - 1]), "move" | "return" | "async")
                        }
                        TokenKind::Literal { .. }
                        | TokenKind::RawIdent
                        | TokenKind::CloseParen
                        | TokenKind::CloseBracket
                        | TokenKind::CloseBrace
                        | TokenKind::Question
                        | TokenKind::Or => false,
                        _ => true,
                    };
                if opens {
                    if let Some(end) = until(index + 1, &|t| matches!(t.kind, TokenKind::Or)) {
                        bound.extend(names(index + 1..end));
                    }
                }
            }
            // `pattern =>`: back to the `,`, `{` or block that ends the previous arm.
            TokenKind::Gt
                if index > 0
                    && matches!(list[index - 1].kind, TokenKind::Eq)
                    && list[index - 1].end == token.start =>
            {
                let mut depth = 0usize;
                let mut start = index - 1;
                while start > 0 {
                    let previous = &list[start - 1];
                    match previous.kind {
                        TokenKind::CloseParen | TokenKind::CloseBracket => depth += 1,
                        // A block that follows `=>` ends the previous arm.
                        TokenKind::CloseBrace if depth == 0 => {
                            let partners = partners.get_or_insert_with(|| brace_partners(tokens));
                            let open = partners[start - 1];
                            if open == usize::MAX
                                || (open > 0 && matches!(list[open - 1].kind, TokenKind::Gt))
                            {
                                break;
                            }
                            depth += 1;
                        }
                        TokenKind::CloseBrace => depth += 1,
                        TokenKind::OpenParen | TokenKind::OpenBracket | TokenKind::OpenBrace => {
                            if depth == 0 {
                                break;
                            }
                            depth -= 1;
                        }
                        TokenKind::Comma | TokenKind::Semi if depth == 0 => break,
                        // Into the previous arm: `A => if x { .. } else { .. }`.
                        TokenKind::Gt
                            if depth == 0
                                && start >= 2
                                && matches!(list[start - 2].kind, TokenKind::Eq)
                                && list[start - 2].end == previous.start =>
                        {
                            break
                        }
                        _ => {}
                    }
                    start -= 1;
                }
                bound.extend(names(start..index - 1));
            }
            _ => {}
        }
    }
    bound
}

/// For each `}` of the token list, the index of its `{` (`usize::MAX` for other tokens and
/// unbalanced braces).
fn brace_partners(tokens: &Tokens<'_>) -> Vec<usize> {
    let mut partners = vec![usize::MAX; tokens.list.len()];
    let mut open = Vec::new();
    for (index, token) in tokens.list.iter().enumerate() {
        match token.kind {
            TokenKind::OpenBrace => open.push(index),
            TokenKind::CloseBrace => {
                if let Some(start) = open.pop() {
                    partners[index] = start;
                }
            }
            _ => {}
        }
    }
    partners
}

/// The names a `let` statement binds: its pattern's words (after `let`, up to its type or `=`).
fn pattern_names<'a, 't>(
    tokens: &'a Tokens<'t>,
    binding: &Let,
) -> impl Iterator<Item = &'t str> + 'a {
    tokens.list[binding.keyword + 1..binding.rest]
        .iter()
        .filter_map(|token| tokens.name(token))
}
