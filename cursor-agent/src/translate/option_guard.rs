//! Property: no model-supplied path, pattern or directory becomes an option of any command
//! this crate generates (translations and redirect texts alike).
//!
//! The generated commands are lexed as a POSIX shell would: quoting, `|`, `&&`, `||`, `;`,
//! `{ }` groups, `$( )` and redirections. In each simple command, a word carrying the planted
//! value must be a redirection target, follow a `--` (for commands that honour it) or
//! `printf`'s format, or not start with `-`. `find` takes no `--` for its paths, so there the word must not start with
//! `-` at all.

use proptest::prelude::*;

use crate::intent::{Intent, delete_composite};

/// A lexed shell word: its value after quote removal, and whether any of it was unquoted.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    /// `|`, `&&`, `||`, `;`, `{`, `}`, `$(`, `)`, a newline: they end a simple command.
    Break,
    /// `<` or `>`: the next word is a file, never an argument.
    Redirect,
}

fn lex(command: &str) -> Vec<Token> {
    let chars: Vec<char> = command.chars().collect();
    let mut tokens = Vec::new();
    let mut word: Option<String> = None;
    let mut i = 0;
    let flush = |word: &mut Option<String>, tokens: &mut Vec<Token>| {
        if let Some(w) = word.take() {
            tokens.push(Token::Word(w));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|c| *c == '\'')
                    .expect("closed single quote")
                    + i
                    + 1;
                word.get_or_insert_with(String::new)
                    .extend(&chars[i + 1..end]);
                i = end;
            }
            '"' => {
                let mut j = i + 1;
                let w = word.get_or_insert_with(String::new);
                while chars[j] != '"' {
                    if chars[j] == '\\' {
                        j += 1;
                    }
                    w.push(chars[j]);
                    j += 1;
                }
                i = j;
            }
            '\\' => {
                i += 1;
                word.get_or_insert_with(String::new).push(chars[i]);
            }
            ' ' | '\t' => flush(&mut word, &mut tokens),
            '\n' | ';' | '(' | ')' => {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Break);
            }
            '|' | '&' => {
                flush(&mut word, &mut tokens);
                if chars.get(i + 1) == Some(&c) {
                    i += 1;
                }
                tokens.push(Token::Break);
            }
            '{' | '}' if word.is_none() => tokens.push(Token::Break),
            '$' if chars.get(i + 1) == Some(&'(') => {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Break);
                i += 1;
            }
            '<' | '>' => {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Redirect);
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
        i += 1;
    }
    flush(&mut word, &mut tokens);
    tokens
}

/// Every word carrying `planted` that a command could read as an option.
fn exposed(command: &str, planted: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let mut argv: Vec<String> = Vec::new();
    let mut redirect = false;
    let mut check = |argv: &mut Vec<String>| {
        let Some(program) = argv.first() else { return };
        let honours_dashdash = program != "find";
        // printf takes no options here: its first operand is the format, the rest are values.
        let mut ended = program == "printf" && argv.get(1).is_some_and(|f| !f.starts_with('-'));
        for arg in &argv[1..] {
            if honours_dashdash && arg == "--" && !ended {
                ended = true;
                continue;
            }
            if arg.contains(planted) && arg.starts_with('-') && !ended {
                // `--include=GLOB`: the value is glued to its option.
                if !arg.starts_with("--include=") {
                    bad.push(arg.clone());
                }
            }
        }
        argv.clear();
    };
    for token in lex(command) {
        match token {
            Token::Word(w) if redirect => {
                redirect = false;
                let _ = w;
            }
            Token::Word(w) => argv.push(w),
            Token::Redirect => redirect = true,
            Token::Break => check(&mut argv),
        }
    }
    check(&mut argv);
    bad
}

/// Every shell form the crate can generate for these values.
fn forms(value: &str, other: &str) -> Vec<String> {
    let some = || Some(value.to_owned());
    let ops = [
        Intent::Command {
            command: "true".into(),
            cwd: some(),
        },
        Intent::Read {
            path: value.into(),
            offset: None,
            limit: None,
        },
        Intent::Read {
            path: value.into(),
            offset: Some(2),
            limit: Some(3),
        },
        Intent::Write {
            path: value.into(),
            content: other.into(),
        },
        Intent::Write {
            path: other.into(),
            content: value.into(),
        },
        Intent::Search {
            pattern: value.into(),
            path: some(),
            glob: some(),
            ignore_case: Some(true),
            literal: Some(true),
            context: Some(2),
            limit: Some(4),
        },
        Intent::Search {
            pattern: other.into(),
            path: None,
            glob: None,
            ignore_case: None,
            literal: None,
            context: None,
            limit: None,
        },
        Intent::Find {
            pattern: value.into(),
            path: some(),
            limit: Some(3),
        },
        Intent::Find {
            pattern: value.into(),
            path: None,
            limit: None,
        },
        Intent::Find {
            pattern: format!("/{value}/*"),
            path: None,
            limit: None,
        },
        Intent::List {
            path: value.into(),
            limit: Some(3),
        },
    ];
    let mut forms: Vec<String> = ops.iter().filter_map(Intent::as_command).collect();
    forms.push(
        Intent::Delete { path: value.into() }
            .as_command()
            .unwrap_or_default(),
    );
    forms.push(delete_composite(value));
    forms
}

/// Values that start with a dash and carry a marker, with shell-hostile characters around it.
fn dashed() -> impl Strategy<Value = String> {
    (
        "-{1,2}",
        r"[a-z'\x22 ;|&$()*?{},\[\]\\/\n-]{0,12}",
        r"[a-z'\x22 ;|&$()*?{},\[\]\\/\n-]{0,12}",
    )
        .prop_map(|(dashes, a, b)| format!("{dashes}{a}MARK{b}"))
}

proptest! {
    #[test]
    fn a_dashed_value_never_becomes_an_option_of_a_generated_command(
        value in dashed(),
        other in "[a-z./]{1,8}",
    ) {
        for form in forms(&value, &other) {
            let bad = exposed(&form, "MARK");
            prop_assert!(bad.is_empty(), "{form:?} exposes {bad:?}");
        }
    }
}

#[test]
fn the_checker_catches_an_unguarded_find_path() {
    assert_eq!(
        exposed("find '-deleteMARK' -name '*.rs'", "MARK"),
        ["-deleteMARK"]
    );
    assert_eq!(exposed("cat -- '-xMARK'", "MARK"), Vec::<String>::new());
    assert_eq!(exposed("cat '-xMARK' | head", "MARK"), ["-xMARK"]);
    assert_eq!(exposed("printf x > '-xMARK'", "MARK"), Vec::<String>::new());
}
