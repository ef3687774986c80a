//! Rust source cut into the words and punctuation that module paths are made of. Comments,
//! string, character and byte literals, and lifetimes are dropped on the way, so a path written
//! in a comment, a doc example or an error message names nothing.

/// One token of Rust source, as far as paths need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Token {
    /// An identifier or keyword (a raw identifier without its `r#`), or a number.
    Word(String),
    /// `::`.
    PathSep,
    /// Any other punctuation character.
    Punct(char),
}

impl Token {
    /// Whether this is the word `word`.
    pub(crate) fn is_word(&self, word: &str) -> bool {
        matches!(self, Self::Word(w) if w == word)
    }

    /// The word, if this is one.
    pub(crate) fn word(&self) -> Option<&str> {
        match self {
            Self::Word(word) => Some(word),
            _ => None,
        }
    }
}

/// The tokens of `text`, in order.
pub(crate) fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let next = chars.get(at + 1).copied();
        if c.is_whitespace() {
            at += 1;
        } else if c == '/' && next == Some('/') {
            at = chars[at..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(chars.len(), |end| at + end);
        } else if c == '/' && next == Some('*') {
            at = block_comment_end(&chars, at);
        } else if c == '"' {
            at = string_end(&chars, at + 1);
        } else if c == '\'' {
            at = quote_end(&chars, at);
        } else if let Some(end) = prefixed_literal_end(&chars, at) {
            at = end;
        } else if is_word_char(c) {
            // `r#type` is the identifier `type`.
            let start = if c == 'r' && next == Some('#') {
                at + 2
            } else {
                at
            };
            let end = chars[start..]
                .iter()
                .position(|&c| !is_word_char(c))
                .map_or(chars.len(), |len| start + len);
            found.push(Token::Word(chars[start..end].iter().collect()));
            at = end;
        } else if c == ':' && next == Some(':') {
            found.push(Token::PathSep);
            at += 2;
        } else {
            found.push(Token::Punct(c));
            at += 1;
        }
    }
    found
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The index after the block comment opening at `at`; block comments nest.
fn block_comment_end(chars: &[char], at: usize) -> usize {
    let mut depth = 0;
    let mut index = at;
    while index + 1 < chars.len() {
        match (chars[index], chars[index + 1]) {
            ('/', '*') => {
                depth += 1;
                index += 2;
            }
            ('*', '/') => {
                depth -= 1;
                index += 2;
                if depth == 0 {
                    return index;
                }
            }
            _ => index += 1,
        }
    }
    chars.len()
}

/// The index after the closing quote of a string whose contents start at `from`.
fn string_end(chars: &[char], from: usize) -> usize {
    let mut index = from;
    while index < chars.len() {
        match chars[index] {
            '\\' => index += 2,
            '"' => return index + 1,
            _ => index += 1,
        }
    }
    chars.len()
}

/// The index after a raw string whose contents start at `from` and that closes with `"`
/// followed by `hashes` `#`s.
fn raw_string_end(chars: &[char], from: usize, hashes: usize) -> usize {
    let mut index = from;
    while index < chars.len() {
        if chars[index] == '"'
            && chars[index + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == '#')
                .count()
                == hashes
        {
            return index + 1 + hashes;
        }
        index += 1;
    }
    chars.len()
}

/// The index after what the `'` at `at` opens: a character literal, or a lifetime or loop
/// label (a quote that does not close two characters later).
fn quote_end(chars: &[char], at: usize) -> usize {
    match (chars.get(at + 1), chars.get(at + 2)) {
        (Some('\\'), _) => chars[at + 3..]
            .iter()
            .position(|&c| c == '\'')
            .map_or(chars.len(), |end| at + 3 + end + 1),
        (Some(_), Some('\'')) => at + 3,
        _ => chars[at + 1..]
            .iter()
            .position(|&c| !is_word_char(c))
            .map_or(chars.len(), |len| at + 1 + len),
    }
}

/// The index after the literal starting at `at` if one starts there with a letter: a byte
/// or C string (`b"…"`, `c"…"`), a byte (`b'…'`) or a raw string (`r"…"`, `br#"…"#`, …).
fn prefixed_literal_end(chars: &[char], at: usize) -> Option<usize> {
    let mut index = at;
    if matches!(chars[index], 'b' | 'c') {
        index += 1;
    }
    if chars.get(index) == Some(&'r') {
        let hashes = chars[index + 1..].iter().take_while(|&&c| c == '#').count();
        let quote = index + 1 + hashes;
        return (chars.get(quote) == Some(&'"')).then(|| raw_string_end(chars, quote + 1, hashes));
    }
    if index == at {
        return None;
    }
    match chars.get(index) {
        Some('"') => Some(string_end(chars, index + 1)),
        Some('\'') if chars[at] == 'b' => Some(quote_end(chars, index)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        tokens(text)
            .into_iter()
            .filter_map(|token| token.word().map(str::to_owned))
            .collect()
    }

    #[test]
    fn comments_literals_and_lifetimes_name_nothing() {
        let text = r####"
            a // super::x
            /* crate::y /* nested */ still comment */ b
            "crate::z \" still" c
            r#"super::w "quoted" "# d
            br##"x"# y"## e b"bytes" f b'q' g c"cstr" h
            'x' '\'' '\u{1F600}' i
            fn f<'life>(x: &'life u8) { 'outer: loop {} } j
            r#type k
        "####;
        assert_eq!(
            words(text),
            [
                "a", "b", "c", "d", "e", "f", "g", "h", "i", "fn", "f", "x", "u8", "loop", "j",
                "type", "k"
            ]
        );
    }

    #[test]
    fn a_path_separator_is_one_token() {
        assert_eq!(
            tokens("super::a:b"),
            [
                Token::Word("super".into()),
                Token::PathSep,
                Token::Word("a".into()),
                Token::Punct(':'),
                Token::Word("b".into()),
            ]
        );
    }
}
