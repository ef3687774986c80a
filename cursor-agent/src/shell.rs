//! The POSIX shell forms translations and redirect texts generate. Every value a model supplied
//! is single-quoted, and every path operand is guarded twice: it follows `--` and, when it
//! starts with `-`, gets a `./` prefix (the only guard `find` and `cd -` honour).

/// Single-quotes `text` for a POSIX shell.
pub(crate) fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A quoted path operand that no command can read as an option.
pub(crate) fn operand(path: &str) -> String {
    if path.starts_with('-') {
        shell_quote(&format!("./{path}"))
    } else {
        shell_quote(path)
    }
}

/// `command` run in `dir`: `cd -- DIR && {` … `}`. The group keeps a multi-statement command
/// from running partly outside `dir` when the `cd` fails; the newlines keep a trailing comment
/// from swallowing the closing brace.
pub(crate) fn in_directory(dir: &str, command: &str) -> String {
    format!("cd -- {} && {{\n{command}\n}}", operand(dir))
}

/// Cursor's glob rule (common find tools agree): a pattern is searched for at any depth unless it is absolute
/// or already starts with `**/` (`*.rs` means `**/*.rs`).
pub(crate) fn recursive_glob(pattern: &str) -> String {
    if pattern.starts_with("**/") || pattern.starts_with('/') || pattern == "**" {
        pattern.to_owned()
    } else {
        format!("**/{pattern}")
    }
}

/// Files (not directories) under `path` whose path relative to it matches the glob `pattern`,
/// one per line. `find` only lists; the match is a `grep -E` of the glob's regex over whole
/// relative paths, so `**`, `*`, `?`, classes and braces keep their glob meaning. `.git` is
/// skipped. An absolute pattern searches from its literal leading directories and prints
/// absolute paths.
pub(crate) fn find_command(pattern: &str, path: Option<&str>, limit: Option<i32>) -> String {
    let pattern = recursive_glob(pattern);
    let regex = glob_regex(&pattern);
    let (prefix, root) = if pattern.starts_with('/') {
        (String::new(), operand(&literal_root(&pattern)))
    } else {
        let prefix = path.map(|dir| format!("cd -- {} && ", operand(dir)));
        (prefix.unwrap_or_default(), ".".to_owned())
    };
    // grep exits 1 when nothing matched: an empty result, not a failure.
    let mut command = format!(
        "{prefix}find {root} -name .git -prune -o ! -type d -print | sed 's|^\\./||' | \
         {{ grep -E -- {} || [ $? -eq 1 ]; }}",
        shell_quote(&regex)
    );
    if let Some(limit) = limit.filter(|l| *l > 0) {
        command.push_str(&format!(" | head -n {limit}"));
    }
    command
}

/// The leading directories of an absolute pattern that hold no glob syntax (`/a/b/*.rs` →
/// `/a/b`).
fn literal_root(pattern: &str) -> String {
    let parts: Vec<&str> = pattern.split('/').collect();
    let literal = parts
        .iter()
        .take_while(|part| !part.contains(['*', '?', '[', '{', '\\']))
        .count();
    // A wholly literal pattern names a file: search its parent.
    let dirs = &parts[..literal.min(parts.len() - 1)];
    let root = dirs.join("/");
    if root.is_empty() { "/".into() } else { root }
}

/// The most alternatives one pattern's braces may expand to.
const MAX_ALTERNATIVES: usize = 256;

/// The anchored POSIX extended regex matching the same paths as the glob `pattern`.
pub(crate) fn glob_regex(pattern: &str) -> String {
    let alternatives: Vec<String> = expand_braces(pattern)
        .iter()
        .map(|glob| glob_to_ere(glob))
        .collect();
    format!("^({})$", alternatives.join("|"))
}

/// Brace expansion as globs use it: `a{b,c{d,e}}` → `ab`, `acd`, `ace`. Braces without a
/// top-level comma, unbalanced braces and escaped braces stay literal. Expansion stops at
/// [`MAX_ALTERNATIVES`], keeping the rest of the pattern unexpanded (literal).
fn expand_braces(pattern: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(pattern, &mut out);
    out
}

fn expand_into(pattern: &str, out: &mut Vec<String>) {
    if out.len() >= MAX_ALTERNATIVES {
        return;
    }
    let Some((open, close, commas)) = first_group(pattern) else {
        out.push(pattern.to_owned());
        return;
    };
    let (head, tail) = (&pattern[..open], &pattern[close + 1..]);
    let mut start = open + 1;
    for end in commas.into_iter().chain([close]) {
        expand_into(&format!("{head}{}{tail}", &pattern[start..end]), out);
        start = end + 1;
    }
}

/// The first `{…}` group with a top-level comma: its brace offsets and comma offsets.
fn first_group(pattern: &str) -> Option<(usize, usize, Vec<usize>)> {
    let bytes = pattern.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 1,
            b'{' => {
                if let Some((close, commas)) = group_end(bytes, at)
                    && !commas.is_empty()
                {
                    return Some((at, close, commas));
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// The matching `}` of the `{` at `open` and the commas at its top level.
fn group_end(bytes: &[u8], open: usize) -> Option<(usize, Vec<usize>)> {
    let mut depth = 0usize;
    let mut commas = Vec::new();
    let mut at = open;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 1,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((at, commas));
                }
            }
            b',' if depth == 1 => commas.push(at),
            _ => {}
        }
        at += 1;
    }
    None
}

/// One brace-free glob as an unanchored ERE. `/` is only ever matched literally.
fn glob_to_ere(glob: &str) -> String {
    let chars: Vec<char> = glob.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                i += 1;
                push_literal(&mut out, chars[i]);
            }
            '*' => {
                let run = chars[i..].iter().take_while(|c| **c == '*').count();
                let starts_part = i == 0 || chars[i - 1] == '/';
                let next = chars.get(i + run);
                i += run - 1;
                if run >= 2 && starts_part && next == Some(&'/') {
                    // `**/`: any number of whole directories, none included.
                    out.push_str("([^/]*/)*");
                    i += 1;
                } else if run >= 2 && starts_part && next.is_none() {
                    out.push_str(".*");
                } else {
                    out.push_str("[^/]*");
                }
            }
            '?' => out.push_str("[^/]"),
            '[' => match class(&chars[i..]) {
                Some((ere, len)) => {
                    out.push_str(&ere);
                    i += len - 1;
                }
                None => push_literal(&mut out, '['),
            },
            c => push_literal(&mut out, c),
        }
        i += 1;
    }
    out
}

/// A glob class at the start of `chars` (`[abc]`, `[!a-z]`, `[]x]`) as an ERE bracket
/// expression that never matches `/`, and its length; `None` when it is not closed.
fn class(chars: &[char]) -> Option<(String, usize)> {
    let mut at = 1;
    let negated = matches!(chars.get(at), Some('!' | '^'));
    if negated {
        at += 1;
    }
    let body_start = at;
    // A `]` right after the opening is a member, not the end.
    if chars.get(at) == Some(&']') {
        at += 1;
    }
    while at < chars.len() && chars[at] != ']' {
        at += 1;
    }
    if at >= chars.len() {
        return None;
    }
    let body: String = chars[body_start..at]
        .iter()
        .filter(|c| **c != '/' && **c != '\\')
        .collect();
    if body.is_empty() {
        return None;
    }
    // A leading `]` stays first; `/` is excluded from negated classes.
    let ere = if negated {
        format!("[^/{body}]")
    } else {
        format!("[{body}]")
    };
    // `[^/]...]` would end early when the body starts with `]`: move that `]` first.
    let ere = if negated && body.starts_with(']') {
        format!("[^]/{}]", &body[1..])
    } else {
        ere
    };
    Some((ere, at + 1))
}

fn push_literal(out: &mut String, c: char) {
    if ".^$+(){}|[]\\*?".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_survives_embedded_quotes() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn operands_starting_with_a_dash_get_a_dot_slash() {
        assert_eq!(operand("-delete"), "'./-delete'");
        assert_eq!(operand("/abs"), "'/abs'");
        assert_eq!(operand("-"), "'./-'");
    }

    #[test]
    fn braces_expand_like_globs() {
        assert_eq!(expand_braces("*.{rs,toml}"), ["*.rs", "*.toml"]);
        assert_eq!(expand_braces("a{b,c{d,e}}f"), ["abf", "acdf", "acef"]);
        assert_eq!(expand_braces("{x}"), ["{x}"]);
        assert_eq!(expand_braces("{a,b"), ["{a,b"]);
        assert_eq!(expand_braces(r"\{a,b}"), [r"\{a,b}"]);
        let many = "{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}";
        assert_eq!(expand_braces(many).len(), MAX_ALTERNATIVES);
    }

    #[test]
    fn glob_syntax_becomes_path_aware_regex() {
        assert_eq!(glob_regex("**/*.toml"), r"^(([^/]*/)*[^/]*\.toml)$");
        assert_eq!(glob_regex("src/?.rs"), r"^(src/[^/]\.rs)$");
        assert_eq!(glob_regex("a/**"), r"^(a/.*)$");
        assert_eq!(glob_regex("[!a]x"), r"^([^/a]x)$");
        assert_eq!(glob_regex("[ab"), r"^(\[ab)$");
        assert_eq!(glob_regex("*.{c,h}"), r"^([^/]*\.c|[^/]*\.h)$");
    }

    #[test]
    fn patterns_search_at_any_depth_unless_anchored() {
        assert_eq!(recursive_glob("*.rs"), "**/*.rs");
        assert_eq!(recursive_glob("src/*.rs"), "**/src/*.rs");
        assert_eq!(recursive_glob("**/x"), "**/x");
        assert_eq!(recursive_glob("/etc/*.conf"), "/etc/*.conf");
        assert_eq!(literal_root("/etc/x/*.conf"), "/etc/x");
        assert_eq!(literal_root("/*.conf"), "/");
    }

    #[test]
    fn find_commands_cd_into_the_guarded_path() {
        assert_eq!(
            find_command("*.toml", Some("-delete"), Some(5)),
            "cd -- './-delete' && find . -name .git -prune -o ! -type d -print | \
             sed 's|^\\./||' | { grep -E -- '^(([^/]*/)*[^/]*\\.toml)$' || [ $? -eq 1 ]; } | \
             head -n 5"
        );
    }
}
