//! The tokens [`super::split`] needs from TypeScript/JavaScript: words, literals (strings,
//! template literals, regular expressions, numbers) skipped whole, brackets with their depth,
//! and punctuation one byte at a time (only `.`, `?.`, `++`, `--` and `!` are told apart).
//!
//! A `/` starts a regular expression unless the token before it ends an expression (a name, a
//! literal, `)` other than an `if (..)`/`for (..)`/`while (..)`/`with (..)` condition's, `]`, a
//! TypeScript non-null `!`), the classic rule. Where that rule does not decide (`}` or `++`
//! before a `/`, `of`/`await`/`yield`/`let` that may be names) the lexer reports [`Unsure`].

/// The lexer cannot tell what comes next; the whole file is parsed instead.
#[derive(Debug)]
pub struct Unsure;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Word,
    /// A number, string, regular expression or template literal (without substitutions, or
    /// the part after its last `}`).
    Literal,
    /// A template literal's part that ends with `${`.
    TemplateOpen,
    Punct,
    Open,
    Close,
}

/// One token: its byte range, the bracket depth outside it (a bracket's own depth is that of
/// the text around it), whether a line break comes before it.
#[derive(Debug, Clone, Copy)]
pub struct Token {
    pub start: usize,
    pub end: usize,
    pub depth: usize,
    pub newline_before: bool,
    kind: Kind,
    /// A word right after `.` or `?.` (a property name, never a keyword).
    member: bool,
    /// A `)` that closes an `if`/`for`/`while`/`with` head, or a postfix `!`.
    special: bool,
}

impl Token {
    pub fn word<'t>(&self, text: &'t str) -> &'t str {
        if self.kind == Kind::Word {
            &text[self.start..self.end]
        } else {
            ""
        }
    }

    /// A name, keyword, string or number: what may start the next statement.
    pub fn starts_statement(&self, text: &str) -> bool {
        match self.kind {
            Kind::Word => text.as_bytes()[self.start] != b'#',
            Kind::Literal => matches!(text.as_bytes()[self.start], b'"' | b'\'' | b'0'..=b'9'),
            _ => false,
        }
    }

    pub fn is_close_brace(&self, text: &str) -> bool {
        self.kind == Kind::Close && text.as_bytes()[self.start] == b'}'
    }

    pub fn is_semicolon(&self, text: &str) -> bool {
        self.kind == Kind::Punct && text.as_bytes()[self.start] == b';'
    }

    /// A name (keywords are the caller's to exclude), a literal, `]` or a `)` that is not a
    /// statement's condition.
    pub fn ends_expression(&self, text: &str) -> bool {
        match self.kind {
            Kind::Word | Kind::Literal => true,
            Kind::Close => match text.as_bytes()[self.start] {
                b')' => !self.special,
                b']' => true,
                _ => false,
            },
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Paren {
        condition: bool,
    },
    Bracket,
    Brace,
    /// `${` of a template literal: its `}` goes back into the template.
    Substitution,
}

/// Bytes of names: ASCII letters, digits, `_`, `$`, and every byte of a non-ASCII character
/// (checked to be no blank where it is met).
pub fn is_word_byte(byte: u8) -> bool {
    WORD[usize::from(byte)]
}

/// [`is_word_byte`] as a table.
static WORD: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
        byte += 1;
    }
    table
};

/// Keywords after which a `/` starts a regular expression.
const BEFORE_REGEX: &[&str] = &[
    "return",
    "typeof",
    "instanceof",
    "in",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
];

/// Words that are keywords in some places and names in others.
const EITHER: &[&str] = &["of", "await", "yield", "let", "async"];

pub struct Lexer<'t> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
    stack: Vec<Open>,
    last: Option<Token>,
    before_last: Option<Token>,
}

impl<'t> Lexer<'t> {
    /// A lexer over `text`; `None` when the text holds what the lexer does not handle: line or
    /// paragraph separators (they end `//` comments), HTML-like comments.
    pub fn new(text: &'t str) -> Option<Self> {
        let bytes = text.as_bytes();
        let finder = |needle: &[u8]| memchr::memmem::find(bytes, needle).is_some();
        if finder("\u{2028}".as_bytes()) || finder("\u{2029}".as_bytes()) || finder(b"<!--") {
            return None;
        }
        // `-->` at the start of a line is a comment in scripts.
        for found in memchr::memmem::find_iter(bytes, b"-->") {
            let line = bytes[..found]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |n| n + 1);
            if bytes[line..found].iter().all(u8::is_ascii_whitespace) {
                return None;
            }
        }
        let mut pos = usize::from(text.starts_with('\u{feff}')) * 3;
        if text[pos..].starts_with("#!") {
            pos = memchr::memchr(b'\n', bytes).unwrap_or(bytes.len());
        }
        Some(Lexer {
            text,
            bytes,
            pos,
            stack: Vec::new(),
            last: None,
            before_last: None,
        })
    }

    /// The bracket depth at the end of what was read.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// The next token outside every bracket (a bracket that opens or closes the outermost level
    /// included), `Ok(None)` at the end of the text.
    pub fn next_top(&mut self) -> Result<Option<Token>, Unsure> {
        loop {
            match self.next()? {
                Some(token) if token.depth > 0 => {}
                found => return Ok(found),
            }
        }
    }

    /// The next token, `Ok(None)` at the end of the text.
    #[inline(always)]
    fn next(&mut self) -> Result<Option<Token>, Unsure> {
        let newline_before = self.skip_trivia()?;
        let Some(&byte) = self.bytes.get(self.pos) else {
            return Ok(None);
        };
        let start = self.pos;
        let depth = self.stack.len();
        let mut token = Token {
            start,
            end: start,
            depth,
            newline_before,
            kind: Kind::Punct,
            member: false,
            special: false,
        };
        match byte {
            b'"' | b'\'' => {
                self.pos = self.string_end(byte)?;
                token.kind = Kind::Literal;
            }
            b'`' => {
                self.pos += 1;
                token.kind = self.template()?;
            }
            b'0'..=b'9' => {
                self.pos = self.word_end(start)?;
                token.kind = Kind::Literal;
            }
            b'.' if self.bytes.get(start + 1).is_some_and(u8::is_ascii_digit) => {
                self.pos = self.word_end(start + 1)?;
                token.kind = Kind::Literal;
            }
            b'/' => {
                if self.regex_allowed()? {
                    self.pos = self.regex_end()?;
                    token.kind = Kind::Literal;
                } else {
                    self.pos += 1;
                }
            }
            b'(' | b'[' | b'{' => {
                self.pos += 1;
                token.kind = Kind::Open;
                self.stack.push(match byte {
                    b'(' => Open::Paren {
                        condition: self.opens_condition(),
                    },
                    b'[' => Open::Bracket,
                    _ => Open::Brace,
                });
            }
            b')' | b']' | b'}' => {
                self.pos += 1;
                let open = self.stack.pop().ok_or(Unsure)?;
                token.depth = self.stack.len();
                match (byte, open) {
                    (b'}', Open::Substitution) => token.kind = self.template()?,
                    (b')', Open::Paren { condition }) => {
                        token.kind = Kind::Close;
                        token.special = condition;
                    }
                    (b']', Open::Bracket) | (b'}', Open::Brace) => token.kind = Kind::Close,
                    _ => return Err(Unsure),
                }
            }
            b'#' => {
                self.pos = self.word_end(start + 1)?;
                token.kind = Kind::Word;
            }
            b'\\' => return Err(Unsure),
            _ if is_word_byte(byte) => {
                self.pos = self.word_end(start)?;
                token.kind = Kind::Word;
                token.member = self.last.is_some_and(|last| {
                    last.kind == Kind::Punct && matches!(self.bytes[last.end - 1], b'.')
                });
            }
            b'?' if self.bytes.get(start + 1) == Some(&b'.')
                && !self.bytes.get(start + 2).is_some_and(u8::is_ascii_digit) =>
            {
                self.pos += 2;
            }
            b'+' | b'-' if self.bytes.get(start + 1) == Some(&byte) => self.pos += 2,
            b'!' => {
                self.pos += 1;
                token.special = self
                    .last
                    .is_some_and(|last| last.ends_expression(self.text) && !self.is_keyword(&last));
            }
            _ => self.pos += 1,
        }
        token.end = self.pos;
        self.before_last = self.last;
        self.last = Some(token);
        Ok(Some(token))
    }

    /// Skips blanks and comments; whether a line break was among them.
    fn skip_trivia(&mut self) -> Result<bool, Unsure> {
        let mut newline = false;
        while let Some(&byte) = self.bytes.get(self.pos) {
            match byte {
                b' ' | b'\t' | 0x0b | 0x0c => self.pos += 1,
                b'\n' | b'\r' => {
                    newline = true;
                    self.pos += 1;
                }
                b'/' if self.bytes.get(self.pos + 1) == Some(&b'/') => {
                    self.pos = memchr::memchr2(b'\n', b'\r', &self.bytes[self.pos..])
                        .map_or(self.bytes.len(), |n| self.pos + n);
                }
                b'/' if self.bytes.get(self.pos + 1) == Some(&b'*') => {
                    let body = &self.bytes[self.pos + 2..];
                    let end = memchr::memmem::find(body, b"*/").ok_or(Unsure)?;
                    newline |= memchr::memchr2(b'\n', b'\r', &body[..end]).is_some();
                    self.pos += 2 + end + 2;
                }
                0x80.. => {
                    let ch = self.text[self.pos..].chars().next().ok_or(Unsure)?;
                    if ch.is_whitespace() || ch == '\u{feff}' {
                        return Err(Unsure);
                    }
                    break;
                }
                _ => break,
            }
        }
        Ok(newline)
    }

    /// The end of the word (or number) from `from`; unsure at a non-ASCII blank.
    #[inline(always)]
    fn word_end(&self, from: usize) -> Result<usize, Unsure> {
        let mut end = from;
        let mut wide = false;
        while let Some(&byte) = self.bytes.get(end) {
            if !WORD[usize::from(byte)] {
                break;
            }
            wide |= byte >= 0x80;
            end += 1;
        }
        if wide
            && self.text[from..end]
                .chars()
                .any(|ch| ch.is_whitespace() || ch == '\u{feff}')
        {
            return Err(Unsure);
        }
        Ok(end)
    }

    /// The end of the string literal starting at `self.pos` with `quote`.
    fn string_end(&self, quote: u8) -> Result<usize, Unsure> {
        let mut index = self.pos + 1;
        loop {
            let found = memchr::memchr3(quote, b'\\', b'\n', &self.bytes[index..]).ok_or(Unsure)?;
            index += found;
            match self.bytes[index] {
                b'\\' => {
                    // A backslash before `\r\n` continues the line: skip all three.
                    let crlf = self.bytes.get(index + 1..index + 3) == Some(b"\r\n");
                    index += if crlf { 3 } else { 2 };
                }
                b'\n' => return Err(Unsure),
                _ => return Ok(index + 1),
            }
        }
    }

    /// Reads a template literal's text from `self.pos` up to its closing backquote or its next
    /// `${` (pushed as a substitution).
    fn template(&mut self) -> Result<Kind, Unsure> {
        loop {
            let found =
                memchr::memchr3(b'`', b'\\', b'$', &self.bytes[self.pos..]).ok_or(Unsure)?;
            self.pos += found;
            match self.bytes[self.pos] {
                b'`' => {
                    self.pos += 1;
                    return Ok(Kind::Literal);
                }
                b'\\' => self.pos += 2,
                _ if self.bytes.get(self.pos + 1) == Some(&b'{') => {
                    self.pos += 2;
                    self.stack.push(Open::Substitution);
                    return Ok(Kind::TemplateOpen);
                }
                _ => self.pos += 1,
            }
        }
    }

    /// The end of the regular expression literal starting at `self.pos` (flags included).
    fn regex_end(&self) -> Result<usize, Unsure> {
        let mut index = self.pos + 1;
        let mut class = false;
        loop {
            match *self.bytes.get(index).ok_or(Unsure)? {
                b'\\' => index += 1,
                b'[' => class = true,
                b']' => class = false,
                b'/' if !class => break,
                b'\n' | b'\r' => return Err(Unsure),
                _ => {}
            }
            index += 1;
        }
        self.word_end(index + 1)
    }

    fn is_keyword(&self, token: &Token) -> bool {
        let word = token.word(self.text);
        !token.member && (BEFORE_REGEX.contains(&word) || EITHER.contains(&word) || word == "yield")
    }

    /// Whether a `/` here starts a regular expression (see the module's documentation).
    fn regex_allowed(&self) -> Result<bool, Unsure> {
        let Some(last) = self.last else {
            return Ok(true);
        };
        let byte = self.bytes[last.start];
        match last.kind {
            Kind::Word if last.member => Ok(false),
            Kind::Word => {
                let word = last.word(self.text);
                if EITHER.contains(&word) {
                    Err(Unsure)
                } else {
                    Ok(BEFORE_REGEX.contains(&word))
                }
            }
            Kind::Literal => Ok(false),
            Kind::TemplateOpen | Kind::Open => Ok(true),
            Kind::Close => match byte {
                b')' => Ok(last.special),
                b']' => Ok(false),
                _ => Err(Unsure),
            },
            Kind::Punct => match byte {
                b'+' | b'-' if last.end - last.start == 2 => Err(Unsure),
                b'!' => Ok(!last.special),
                _ => Ok(true),
            },
        }
    }

    /// Whether a `(` read now opens the condition of `if`, `for`, `while` or `with` (`for
    /// await (`).
    fn opens_condition(&self) -> bool {
        let is = |token: Option<Token>, words: &[&str]| {
            token.is_some_and(|token| !token.member && words.contains(&token.word(self.text)))
        };
        is(self.last, &["if", "for", "while", "with"])
            || (is(self.last, &["await"]) && is(self.before_last, &["for"]))
    }
}
