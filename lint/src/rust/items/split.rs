//! The splitter: a file lexed once ([`Tokens`]), and a list of items or a block's statements
//! split at their top-level `;` and `}` ([`split`]).

use ra_ap_rustc_lexer::TokenKind;

use super::lexer;

/// Keywords of the statements a `}` may end (with no `;`): blocks, control flow, nested items.
/// Any other statement that reaches a `}` at its top level (`S { .. }.f();`, `m! { .. }`) runs
/// on to its `;`: merging two statements only keeps more, a wrong split would not parse.
const BRACE_ENDED: &[&str] = &[
    "if",
    "match",
    "for",
    "while",
    "loop",
    "fn",
    "impl",
    "trait",
    "mod",
    "enum",
    "union",
    "struct",
    "macro_rules",
];

/// One item: its byte range (attributes and doc comments included), its tokens (indices into
/// [`Tokens::list`]) and its first keyword.
pub(super) struct Item<'t> {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) first: usize,
    pub(super) last: usize,
    pub(super) keyword: &'t str,
}

/// What [`split`] finds in a list of items.
pub(super) struct Split<'t> {
    pub(super) items: Vec<Item<'t>>,
    /// `use rmcp::model::ContextInclusion as Ctx;`: items that say `Ctx::AllServers` name the
    /// legacy item without its trigger word. Only names that hide a trigger word (or `self`,
    /// `super`, `crate`): `use rmcp::ErrorData as McpError` hides nothing a rule looks for.
    pub(super) aliases: Vec<&'t str>,
    /// The offset of the first delimiter deeper than the limit.
    pub(super) too_deep: Option<usize>,
    /// The delimiters balance.
    pub(super) balanced: bool,
}

/// A token that is not whitespace or a plain comment. Its kind is tested with `matches!`, not
/// `==`: `TokenKind`'s derived `PartialEq` is an out-of-line call per token.
#[derive(Clone, Copy)]
pub(super) struct Token {
    pub(super) kind: TokenKind,
    pub(super) start: usize,
    pub(super) end: usize,
}

/// The file lexed once: every level of [`split`] works on slices of the same list.
pub(super) struct Tokens<'t> {
    pub(super) text: &'t str,
    pub(super) list: Vec<Token>,
    /// Where the trigger words start, in order (one automaton pass over the whole file).
    pub(super) triggers: Vec<usize>,
    /// For each opening delimiter, the index of the token that closes it (any closing delimiter
    /// closes the innermost open one, as [`split`] counts depth); `usize::MAX` for the others
    /// and for an unclosed one.
    partner: Vec<usize>,
    /// The offset of the first delimiter that opens a level deeper than the `max_depth` given to
    /// [`Tokens::new`], if any.
    too_deep: Option<usize>,
}

impl<'t> Tokens<'t> {
    pub(super) fn new(text: &'t str, max_depth: usize) -> Self {
        let mut list = Vec::with_capacity(text.len() / 6);
        lexer::tokens(text, |kind, start, end| {
            let trivia = matches!(
                kind,
                TokenKind::Whitespace
                    | TokenKind::LineComment { doc_style: None }
                    | TokenKind::BlockComment {
                        doc_style: None,
                        ..
                    }
            );
            if !trivia {
                list.push(Token { kind, start, end });
            }
        });
        // One pass pairs the delimiters: every level of `split` then jumps over a group whose
        // tokens it does not read (the body of an item, a call's arguments) instead of counting
        // its depth token by token, and `closing` is a lookup.
        let mut partner = vec![usize::MAX; list.len()];
        let mut open = Vec::new();
        let mut too_deep = None;
        for (index, token) in list.iter().enumerate() {
            match token.kind {
                TokenKind::OpenParen | TokenKind::OpenBrace | TokenKind::OpenBracket => {
                    open.push(index);
                    if open.len() > max_depth && too_deep.is_none() {
                        too_deep = Some(token.start);
                    }
                }
                TokenKind::CloseParen | TokenKind::CloseBracket | TokenKind::CloseBrace => {
                    if let Some(opened) = open.pop() {
                        partner[opened] = index;
                    }
                }
                _ => {}
            }
        }
        Tokens {
            text,
            list,
            triggers: Vec::new(),
            partner,
            too_deep,
        }
    }

    pub(super) fn word(&self, token: &Token) -> &'t str {
        &self.text[token.start..token.end]
    }

    /// An identifier's name (`r#type` is `type`).
    pub(super) fn name(&self, token: &Token) -> Option<&'t str> {
        match token.kind {
            TokenKind::Ident => Some(self.word(token)),
            TokenKind::RawIdent => Some(self.word(token).trim_start_matches("r#")),
            _ => None,
        }
    }

    /// Whether `text[start..end]` holds a trigger word. A trigger word holds no `;`, `}` or
    /// leading blank, so none straddles an item's edge: one pass over the file answers for
    /// every item, as [`crate::prefilter::item_may_match`] on the item alone would.
    pub(super) fn has_trigger(&self, start: usize, end: usize) -> bool {
        let first = self.triggers.partition_point(|&at| at < start);
        self.triggers.get(first).is_some_and(|&at| at < end)
    }
}

/// Splits the tokens `first..last` of a list of items (or, with `statements`, of a block's
/// statements) at their top-level `;` and `}`. A block's last expression (no `;`) is never an
/// item, so never blanked.
pub(super) fn split<'t>(
    tokens: &Tokens<'t>,
    first: usize,
    last: usize,
    max_depth: usize,
    statements: bool,
) -> Split<'t> {
    let text = tokens.text;
    let mut out = Split {
        items: Vec::new(),
        aliases: Vec::new(),
        too_deep: None,
        balanced: true,
    };
    // The whole file at its top level (the only call with a finite limit): the depth of each
    // delimiter is its depth in the file, found by `Tokens::new`.
    if max_depth != usize::MAX {
        debug_assert_eq!(first, 0);
        if let Some(at) = tokens.too_deep {
            out.too_deep = Some(at);
            return out;
        }
    }
    let mut depth = 0usize;
    let mut item_start: Option<(usize, usize)> = None;
    let mut keyword: Option<&str> = None;
    // The last item ended at a `}`: a following `;` or `.`/`?` chain still belongs to it
    // (`const X: S = S { .. };`, `static F: Lazy<..> = Lazy::new(|| { .. }).into();`).
    let mut closed_by_brace = false;
    let mut after_as = false;
    // The name before the last `as`, when it may hide a trigger word.
    let mut hides_trigger = false;
    let mut previous_word: Option<Token> = None;
    let mut next = first;
    while next < last {
        let index = next;
        next += 1;
        let token = tokens.list[index];
        let (start, end) = (token.start, token.end);
        if depth == 0 && closed_by_brace {
            closed_by_brace = false;
            // `if .. { } else { }` is one statement; so is `if let S { a, .. } = s { }` and
            // `for S { a } in list { }`, whose first `}` closes a pattern.
            let continues = statements
                && match token.kind {
                    TokenKind::Ident => matches!(tokens.word(&token), "else" | "in"),
                    TokenKind::Eq => true,
                    _ => false,
                };
            if continues
                || matches!(
                    token.kind,
                    TokenKind::Semi | TokenKind::Dot | TokenKind::Question
                )
            {
                let last_item = out.items.pop().expect("closed_by_brace follows a push");
                if matches!(token.kind, TokenKind::Semi) {
                    out.items.push(Item {
                        end,
                        last: index,
                        ..last_item
                    });
                } else {
                    item_start = Some((last_item.start, last_item.first));
                    keyword = Some(last_item.keyword);
                }
                continue;
            }
        }
        match token.kind {
            TokenKind::OpenParen | TokenKind::OpenBrace | TokenKind::OpenBracket => {
                if depth == 0 && item_start.is_none() {
                    item_start = Some((start, index));
                }
                depth += 1;
                if depth > max_depth {
                    out.too_deep = Some(start);
                    return out;
                }
                // Inside a group only delimiters count (and the names of a `use` item): the
                // group's closing delimiter is the next token that matters.
                if keyword != Some("use") && tokens.partner[index] < last {
                    next = tokens.partner[index];
                }
                continue;
            }
            TokenKind::CloseParen | TokenKind::CloseBracket => {
                depth = depth.saturating_sub(1);
                continue;
            }
            TokenKind::CloseBrace => {
                depth = depth.saturating_sub(1);
                let ends_here = !statements
                    || match keyword {
                        Some(word) => BRACE_ENDED.contains(&word),
                        // A block, `{ .. }`.
                        None => item_start.is_some_and(|(begin, _)| text.as_bytes()[begin] == b'{'),
                    };
                if depth == 0 && ends_here {
                    closed_by_brace |=
                        close_item(&mut out.items, &mut item_start, &mut keyword, end, index);
                }
                continue;
            }
            _ => {}
        }
        if matches!(token.kind, TokenKind::Ident) && keyword == Some("use") {
            let word = tokens.word(&token);
            if after_as && word != "_" && hides_trigger {
                out.aliases.push(word);
            }
            after_as = word == "as";
            if after_as {
                hides_trigger = previous_word.is_some_and(|name| {
                    matches!(tokens.word(&name), "self" | "super" | "crate")
                        || tokens.has_trigger(name.start, name.end)
                });
            }
            previous_word = Some(token);
        }
        if depth > 0 {
            continue;
        }
        if item_start.is_none() {
            item_start = Some((start, index));
        }
        if matches!(token.kind, TokenKind::Ident) && keyword.is_none() {
            let word = tokens.word(&token);
            if !matches!(
                word,
                "pub" | "crate" | "in" | "self" | "super" | "unsafe" | "async" | "default"
            ) {
                keyword = Some(word);
            }
        }
        if matches!(token.kind, TokenKind::Semi) {
            close_item(&mut out.items, &mut item_start, &mut keyword, end, index);
        }
    }
    out.balanced = depth == 0;
    out
}

/// Ends the item open since `item_start` (if one is) at byte `end`, token `last`; whether one was.
fn close_item<'t>(
    items: &mut Vec<Item<'t>>,
    item_start: &mut Option<(usize, usize)>,
    keyword: &mut Option<&'t str>,
    end: usize,
    last: usize,
) -> bool {
    let Some((start, first)) = item_start.take() else {
        return false;
    };
    items.push(Item {
        start,
        end,
        first,
        last,
        keyword: keyword.take().unwrap_or(""),
    });
    true
}

/// The token that closes the delimiter opened at `open`, before `last`.
pub(super) fn closing(tokens: &Tokens<'_>, open: usize, last: usize) -> Option<usize> {
    let close = *tokens.partner.get(open)?;
    (close < last).then_some(close)
}

/// The token that opens a container item's body: the first top-level brace after its
/// attributes (`#[..]` uses brackets; `impl<const N: usize>` has no braces).
pub(super) fn body_start(tokens: &Tokens<'_>, item: &Item<'_>) -> Option<usize> {
    let mut depth = 0usize;
    for index in item.first..=item.last {
        match tokens.list[index].kind {
            TokenKind::OpenBrace if depth == 0 => return Some(index),
            TokenKind::OpenParen | TokenKind::OpenBracket | TokenKind::OpenBrace => depth += 1,
            TokenKind::CloseParen | TokenKind::CloseBracket | TokenKind::CloseBrace => {
                depth = depth.saturating_sub(1)
            }
            _ => {}
        }
    }
    None
}
