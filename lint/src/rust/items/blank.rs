//! The blanking: which items and statements of a split file cannot match, replaced with spaces
//! in a copy of the file (line breaks kept).

use ra_ap_rustc_lexer::TokenKind;

use super::lets::{pattern_end, Let};
use super::split::{body_start, closing, split, Item, Tokens};

/// Keywords that start an item kept whatever its words (for `let` statements, see [`super::lets`];
/// for `use` items, [`super::uses`]).
const ALWAYS_KEPT: &[&str] = &["struct", "static", "const", "extern"];

/// Items whose body is itself a list of items, split again when they are kept: the methods of
/// an `impl ServerHandler` block, the functions of a `mod host_fns`. The blocks of any other kept
/// item (a `fn` body, its closures and branches) are split into statements the same way.
const CONTAINERS: &[&str] = &["impl", "mod", "trait"];

/// What [`blank`] decides: the blanked copy of the file, and the `let` statements of the kept
/// blocks, decided last.
#[derive(Default)]
pub(super) struct Blanking {
    pub(super) blanked: Blanked,
    pub(super) lets: Vec<Let>,
    /// The `use` items without a trigger word: `(first, last)` tokens.
    pub(super) uses: Vec<(usize, usize)>,
}

/// The blanked copy of a file (made on the first blank), and the byte ranges blanked in it, in
/// the order they were blanked (they may overlap): what [`super::squeeze`] reads.
#[derive(Default)]
pub(super) struct Blanked {
    pub(super) bytes: Option<Vec<u8>>,
    pub(super) ranges: Vec<(usize, usize)>,
}

/// Replaces `text[start..end]` with spaces, line breaks kept, in the (lazily made) copy.
pub(super) fn blank_range(text: &str, start: usize, end: usize, blanked: &mut Blanked) {
    let out = blanked
        .bytes
        .get_or_insert_with(|| text.as_bytes().to_vec());
    if start < end {
        blanked.ranges.push((start, end));
    }
    let mut from = start;
    while let Some(at) = memchr::memchr2(b'\n', b'\r', &out[from..end]) {
        out[from..from + at].fill(b' ');
        from += at + 1;
    }
    out[from..end].fill(b' ');
}

/// Whether a struct item may have a field the walk looks at: a peer type named in it, or a
/// secret-looking name.
fn struct_may_matter(item: &[u8]) -> bool {
    crate::rust::crate_peers::names_a_peer_type(item) || crate::rust::words::may_name_secret(item)
}

/// Whether a `fn` item may return a peer: a peer type named between its `->` and its body.
fn returns_a_peer(item: &[u8]) -> bool {
    let Some(arrow) = memchr::memmem::find(item, b"->") else {
        return false;
    };
    let rest = &item[arrow..];
    let output = &rest[..memchr::memchr(b'{', rest).unwrap_or(rest.len())];
    crate::rust::crate_peers::names_a_peer_type(output)
}

/// Whether a container item may hold a function that returns a peer: a peer type named between
/// one of its `->` and the next `{` or `;` (what [`returns_a_peer`] reads of each method).
fn may_return_a_peer(item: &[u8]) -> bool {
    memchr::memmem::find_iter(item, b"->").any(|arrow| {
        let rest = &item[arrow..];
        let output = &rest[..memchr::memchr2(b'{', b';', rest).unwrap_or(rest.len())];
        crate::rust::crate_peers::names_a_peer_type(output)
    })
}

/// Blanks the items that cannot match; splits the kept containers again, and blanks the
/// statements that cannot match in every block of the other kept items.
pub(super) fn blank(
    tokens: &Tokens<'_>,
    items: &[Item<'_>],
    aliases: &[&str],
    masked: &mut Blanking,
) {
    let text = tokens.text;
    for item in items {
        if item.keyword == "use" {
            // Decided last too (see `uses.rs`), by the names the rest of what is kept spells.
            if !tokens.has_trigger(item.start, item.end) {
                masked.uses.push((item.first, item.last));
            }
            continue;
        }
        let bytes = &text.as_bytes()[item.start..item.end];
        let may_match = || {
            tokens.has_trigger(item.start, item.end)
                || aliases
                    .iter()
                    .any(|alias| memchr::memmem::find(bytes, alias.as_bytes()).is_some())
        };
        if ALWAYS_KEPT.contains(&item.keyword) {
            // A struct matters to the walk only through its fields: one typed with a peer, or
            // named like a secret (see `FieldCollector` in `analyzer/peers.rs` and
            // `visit_item_struct` in `analyzer/walk.rs`).
            if item.keyword == "struct" && !may_match() && !struct_may_matter(bytes) {
                blank_range(text, item.start, item.end, &mut masked.blanked);
            }
            continue;
        }
        let may_match = may_match();
        if item.keyword == "let" {
            // Decided once the whole file is split (see `prune_lets`); meanwhile the blocks
            // of `let x = match y { A => { .. } }` are split like any other.
            let keyword = (item.first..=item.last)
                .find(|&index| tokens.word(&tokens.list[index]) == "let")
                .unwrap_or(item.first);
            masked.lets.push(Let {
                first: item.first,
                keyword,
                rest: pattern_end(tokens, keyword, item.last),
                last: item.last,
                may_match,
            });
            blank_blocks(tokens, item.first, item.last + 1, aliases, masked);
            continue;
        }
        if !may_match {
            // A function that returns a peer (`fn peer(&self) -> Peer<RoleServer>`): the walk
            // reads its signature (see `FieldCollector` in `analyzer/peers.rs`); its body may go.
            if item.keyword == "fn" && returns_a_peer(bytes) {
                blank_blocks(tokens, item.first, item.last + 1, aliases, masked);
                continue;
            }
            // The same function as a method (`impl Hub { fn upstream(&self) -> Peer<..> }`):
            // the block is split like a kept one, so that the signature stays.
            if !(CONTAINERS.contains(&item.keyword) && may_return_a_peer(bytes)) {
                blank_range(text, item.start, item.end, &mut masked.blanked);
                continue;
            }
        } else if !CONTAINERS.contains(&item.keyword) {
            blank_blocks(tokens, item.first, item.last + 1, aliases, masked);
            continue;
        }
        if bytes.last() == Some(&b'}') {
            if let Some(open) = body_start(tokens, item) {
                let inner = split(tokens, open + 1, item.last, usize::MAX, false);
                if inner.balanced {
                    let mut all_aliases = aliases.to_vec();
                    all_aliases.extend(inner.aliases.iter().copied());
                    blank(tokens, &inner.items, &all_aliases, masked);
                }
            }
        }
    }
}

/// Blanks, in each outermost `{ .. }` of the tokens `first..last` (a `fn` body, a closure's,
/// an `if` branch, a match arm, an `async` block), the statements that cannot match. A brace
/// group that is not a block (`S { a: 1 }`, `m! { .. }`) has no top-level `;`, so no statement.
fn blank_blocks(
    tokens: &Tokens<'_>,
    first: usize,
    last: usize,
    aliases: &[&str],
    masked: &mut Blanking,
) {
    let mut index = first;
    while index < last {
        if !matches!(tokens.list[index].kind, TokenKind::OpenBrace) {
            index += 1;
            continue;
        }
        let Some(close) = closing(tokens, index, last) else {
            return;
        };
        let inner = split(tokens, index + 1, close, usize::MAX, true);
        if inner.balanced {
            let mut all_aliases = aliases.to_vec();
            all_aliases.extend(inner.aliases.iter().copied());
            blank(tokens, &inner.items, &all_aliases, masked);
            // The block's last expression is not an item: only its own blocks are split.
            let tail = inner.items.last().map_or(index + 1, |item| item.last + 1);
            blank_blocks(tokens, tail, close, &all_aliases, masked);
        }
        index = close + 1;
    }
}
