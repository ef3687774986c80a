//! Host results back into native result shapes (PROTOCOL-AGENT §5.1).
//!
//! ## The output conventions
//!
//! A host tool returns text and an error flag; native results want structure. The encoders
//! read the text this way, and nothing else:
//!
//! - **Exit codes.** The last non-empty line is an exit marker when it reads `exit code N`,
//!   `exit code: N`, `exited with code N` or `Command exited with code N` (any case). The marker
//!   sets the exit code and is removed from the output. Without a marker the code is 1 when the
//!   host flagged an error and 0 otherwise. A non-zero code answers with the failure arm.
//! - **Errors.** A result the host flagged as an error is the command's stderr (shell) or the
//!   arm's error text (everything else); stdout is then empty.
//! - **Deletes** run as `... && printf 'D0:%s\n' "$sz"`: the `D0:<size>` line carries the real
//!   pre-delete size. Without it the delete did not happen and the arm answers with its error.
//! - **Grep content** lines read `path:line:text` (or `path-line-text` for context lines,
//!   which are skipped); **Glob** and **listing** lines are one path each, and a listing entry
//!   ending in `/` is a directory. Lines in square brackets are host notes and are skipped.

use std::time::Duration;

use cursor_proto::agent::v1::{self as wire, exec_client_message::Message as Reply};

use super::native::{Native, ShellReply};
use crate::intent::Intent;

/// A host result reduced to what the encoders read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Output {
    pub(crate) text: String,
    pub(crate) is_error: bool,
}

/// The replies that answer `native` (one, or several for a shell stream); the caller appends
/// `stream_close`.
pub(crate) fn encode(
    native: &Native,
    output: &Output,
    elapsed: Duration,
    workspace_root: &str,
) -> Vec<Reply> {
    match native {
        Native::Shell {
            command,
            working_directory,
            reply,
        } => {
            let shell = Shell::from(output);
            match reply {
                ShellReply::Stream => shell_stream(&shell, working_directory),
                ShellReply::Result => vec![Reply::ShellResult(shell_result(
                    &shell,
                    command,
                    working_directory,
                    elapsed,
                ))],
                ShellReply::MiniSweAgent => vec![Reply::MiniSweAgentBashResult(shell_result(
                    &shell,
                    command,
                    working_directory,
                    elapsed,
                ))],
            }
        }
        Native::Read { path, redacted } => {
            let result = read(path, output);
            vec![if *redacted {
                Reply::RedactedReadResult(result)
            } else {
                Reply::ReadResult(result)
            }]
        }
        Native::Write { path, text } => vec![Reply::WriteResult(wire::WriteResult {
            result: Some(if output.is_error {
                wire::write_result::Result::Error(path_error(path, output))
            } else {
                wire::write_result::Result::Success(wire::WriteSuccess {
                    path: path.clone(),
                    lines_created: count_i32(text.lines().count()),
                    file_size: count_i32(text.len()),
                })
            }),
        })],
        Native::Delete { path } => vec![Reply::DeleteResult(delete(path, output))],
        Native::Grep { pattern, path, .. } => {
            let files_mode = matches!(native.intent(), Intent::Find { .. });
            let path = path.as_deref().unwrap_or(workspace_root);
            vec![Reply::GrepResult(grep(
                pattern,
                path,
                files_mode,
                output,
                workspace_root,
            ))]
        }
        Native::Ls { path } => vec![Reply::LsResult(ls(path, output))],
        Native::PiRead(_) => vec![Reply::PiReadResult(wire::PiReadExecResult {
            result: Some(pi_arm(
                output,
                wire::pi_read_exec_result::Result::Success,
                wire::pi_read_exec_result::Result::Error,
            )),
        })],
        Native::PiBash(_) => vec![Reply::PiBashResult(wire::PiBashExecResult {
            result: Some(pi_arm(
                output,
                wire::pi_bash_exec_result::Result::Success,
                wire::pi_bash_exec_result::Result::Error,
            )),
        })],
        Native::PiEdit(_) => vec![Reply::PiEditResult(wire::PiEditExecResult {
            result: Some(pi_arm(
                output,
                wire::pi_edit_exec_result::Result::Success,
                wire::pi_edit_exec_result::Result::Error,
            )),
        })],
        Native::PiWrite(_) => vec![Reply::PiWriteResult(wire::PiWriteExecResult {
            result: Some(pi_arm(
                output,
                wire::pi_write_exec_result::Result::Success,
                wire::pi_write_exec_result::Result::Error,
            )),
        })],
        Native::PiGrep(_) => vec![Reply::PiGrepResult(wire::PiGrepExecResult {
            result: Some(pi_arm(
                output,
                wire::pi_grep_exec_result::Result::Success,
                wire::pi_grep_exec_result::Result::Error,
            )),
        })],
        Native::PiFind(_) => vec![Reply::PiFindResult(wire::PiFindExecResult {
            result: Some(pi_arm(
                output,
                wire::pi_find_exec_result::Result::Success,
                wire::pi_find_exec_result::Result::Error,
            )),
        })],
        Native::PiLs(_) => vec![Reply::PiLsResult(wire::PiLsExecResult {
            result: Some(pi_arm(
                output,
                wire::pi_ls_exec_result::Result::Success,
                wire::pi_ls_exec_result::Result::Error,
            )),
        })],
    }
}

/// A command's outcome under the exit-code convention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shell {
    pub(crate) exit_code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl From<&Output> for Shell {
    fn from(output: &Output) -> Self {
        let (text, marker) = split_exit_marker(&output.text);
        let exit_code = marker.unwrap_or_else(|| i32::from(output.is_error));
        let (stdout, stderr) = if output.is_error {
            (String::new(), text)
        } else {
            (text, String::new())
        };
        Self {
            exit_code,
            stdout,
            stderr,
        }
    }
}

/// The text without a trailing exit marker, and the marker's code.
fn split_exit_marker(text: &str) -> (String, Option<i32>) {
    let trimmed = text.trim_end();
    let (head, last) = match trimmed.rfind('\n') {
        Some(at) => (&trimmed[..at], &trimmed[at + 1..]),
        None => ("", trimmed),
    };
    match exit_marker(last) {
        Some(code) => (head.trim_end_matches('\n').to_owned(), Some(code)),
        None => (text.to_owned(), None),
    }
}

fn exit_marker(line: &str) -> Option<i32> {
    let lower = line
        .trim()
        .trim_matches(|c| c == '(' || c == ')' || c == '[' || c == ']')
        .to_ascii_lowercase();
    let lower = lower.trim_end_matches('.');
    let rest = [
        "command exited with code",
        "exited with code",
        "exit code:",
        "exit code",
    ]
    .iter()
    .find_map(|prefix| lower.strip_prefix(prefix))?;
    rest.trim().parse().ok()
}

fn shell_result(shell: &Shell, command: &str, cwd: &str, elapsed: Duration) -> wire::ShellResult {
    let execution_time = i32::try_from(elapsed.as_millis()).unwrap_or(i32::MAX);
    let result = if shell.exit_code == 0 {
        wire::shell_result::Result::Success(wire::ShellSuccess {
            command: command.to_owned(),
            working_directory: cwd.to_owned(),
            exit_code: 0,
            stdout: shell.stdout.clone(),
            stderr: shell.stderr.clone(),
            execution_time,
        })
    } else {
        wire::shell_result::Result::Failure(wire::ShellFailure {
            command: command.to_owned(),
            working_directory: cwd.to_owned(),
            exit_code: shell.exit_code,
            stdout: shell.stdout.clone(),
            stderr: shell.stderr.clone(),
            execution_time,
            aborted: false,
        })
    };
    wire::ShellResult {
        result: Some(result),
    }
}

/// stdout, stderr (each only when non-empty), then exit. Never a `start` event: it stalls the
/// turn (§5.1).
fn shell_stream(shell: &Shell, cwd: &str) -> Vec<Reply> {
    use wire::shell_stream::Event;
    let mut events = Vec::new();
    if !shell.stdout.is_empty() {
        events.push(Event::Stdout(wire::ShellStreamStdout {
            data: shell.stdout.clone(),
        }));
    }
    if !shell.stderr.is_empty() {
        events.push(Event::Stderr(wire::ShellStreamStderr {
            data: shell.stderr.clone(),
        }));
    }
    events.push(Event::Exit(wire::ShellStreamExit {
        code: u32::try_from(shell.exit_code).unwrap_or(1),
        cwd: cwd.to_owned(),
        aborted: false,
    }));
    events
        .into_iter()
        .map(|event| Reply::ShellStream(wire::ShellStream { event: Some(event) }))
        .collect()
}

fn path_error(path: &str, output: &Output) -> wire::PathError {
    wire::PathError {
        path: path.to_owned(),
        error: output.text.clone(),
    }
}

fn read(path: &str, output: &Output) -> wire::ReadResult {
    wire::ReadResult {
        result: Some(if output.is_error {
            wire::read_result::Result::Error(path_error(path, output))
        } else {
            let (content, truncated) = match truncation_note(&output.text) {
                Some(cut) => cut,
                None => (output.text.clone(), None),
            };
            wire::read_result::Result::Success(wire::ReadSuccess {
                path: path.to_owned(),
                total_lines: truncated
                    .and_then(|t| t.total_lines)
                    .unwrap_or_else(|| count_i32(content.lines().count())),
                file_size: i64::try_from(content.len()).unwrap_or(i64::MAX),
                truncated: truncated.is_some(),
                content,
            })
        }),
    }
}

/// What a host's truncation note says about the whole file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Truncated {
    total_lines: Option<i32>,
}

/// Splits a host's trailing truncation note off a read's text: the content before it, and what
/// the note says. Hosts limit reads (for example to 2000 lines or 50 KB) and say so in a last bracketed
/// line such as `[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]`,
/// `[40 more lines in file. Use offset=11 to continue.]` or `[Line 1 is 60KB, exceeds 50KB
/// limit. ...]`; a command tool's output cap reads the same way.
fn truncation_note(text: &str) -> Option<(String, Option<Truncated>)> {
    let trimmed = text.trim_end();
    let (head, last) = match trimmed.rfind('\n') {
        Some(at) => (&trimmed[..at], &trimmed[at + 1..]),
        None => ("", trimmed),
    };
    let note = last.trim();
    if !is_note(note) {
        return None;
    }
    let lower = note.to_ascii_lowercase();
    let says = [
        "use offset=",
        "more lines",
        "showing lines",
        "exceeds",
        "truncated",
        "full output",
    ];
    if !says.iter().any(|s| lower.contains(s)) {
        return None;
    }
    let number_after = |marker: &str| -> Option<i64> {
        let at = lower.find(marker)? + marker.len();
        let digits: String = lower[at..]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    // `… of TOTAL` states it; `N more lines … offset=NEXT` implies NEXT - 1 + N. The numbers
    // are the file's text, not the host's: one that is negative or overflows states nothing.
    let total = number_after(" of ").or_else(|| {
        let more = lower[1..].split_whitespace().next()?.parse::<i64>().ok()?;
        (more >= 0 && lower.contains("more lines")).then_some(())?;
        // Offsets count from 1.
        let next = number_after("offset=").filter(|next| *next >= 1)?;
        (next - 1).checked_add(more)
    });
    let content = head.trim_end_matches('\n').to_owned();
    Some((
        content,
        Some(Truncated {
            total_lines: total.and_then(|t| i32::try_from(t).ok()),
        }),
    ))
}

/// The footer parser as the fuzz target sees it: the content kept and the total stated.
#[cfg(feature = "fuzzing")]
pub(crate) fn read_footer(text: &str) -> Option<(String, Option<i32>)> {
    truncation_note(text).map(|(content, note)| (content, note.and_then(|n| n.total_lines)))
}

fn delete(path: &str, output: &Output) -> wire::DeleteResult {
    let size = (!output.is_error)
        .then(|| {
            output
                .text
                .lines()
                .rev()
                .find_map(|line| line.trim().strip_prefix("D0:")?.trim().parse::<i64>().ok())
        })
        .flatten();
    let result = match size {
        Some(file_size) => wire::delete_result::Result::Success(wire::DeleteSuccess {
            path: path.to_owned(),
            deleted_file: path.to_owned(),
            file_size,
            prev_content: String::new(),
        }),
        None => wire::delete_result::Result::Error(wire::PathError {
            path: path.to_owned(),
            error: if output.text.trim().is_empty() {
                "the delete did not report the file size, so it did not happen".into()
            } else {
                output.text.clone()
            },
        }),
    };
    wire::DeleteResult {
        result: Some(result),
    }
}

fn grep(
    pattern: &str,
    path: &str,
    files_mode: bool,
    output: &Output,
    workspace_root: &str,
) -> wire::GrepResult {
    if output.is_error {
        return wire::GrepResult {
            result: Some(wire::grep_result::Result::Error(wire::GrepError {
                error: output.text.clone(),
            })),
        };
    }
    let lines = || {
        output
            .text
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty() && !is_note(l))
    };
    let (output_mode, union) = if files_mode {
        let files: Vec<String> = lines().map(str::to_owned).collect();
        let total_files = count_i32(files.len());
        (
            "files_with_matches",
            wire::grep_union_result::Result::Files(wire::GrepFilesResult { files, total_files }),
        )
    } else {
        let mut matches: Vec<wire::GrepFileMatch> = Vec::new();
        let mut total = 0usize;
        for (file, line_number, content) in lines().filter_map(content_line) {
            total += 1;
            let entry = wire::GrepContentMatch {
                line_number,
                content: content.to_owned(),
            };
            match matches.last_mut() {
                Some(last) if last.file == file => last.matches.push(entry),
                _ => matches.push(wire::GrepFileMatch {
                    file: file.to_owned(),
                    matches: vec![entry],
                }),
            }
        }
        (
            "content",
            wire::grep_union_result::Result::Content(wire::GrepContentResult {
                matches,
                total_matched_lines: count_i32(total),
            }),
        )
    };
    let mut workspace_results = std::collections::BTreeMap::new();
    workspace_results.insert(
        workspace_root.to_owned(),
        wire::GrepUnionResult {
            result: Some(union),
        },
    );
    wire::GrepResult {
        result: Some(wire::grep_result::Result::Success(wire::GrepSuccess {
            pattern: pattern.to_owned(),
            path: path.to_owned(),
            output_mode: output_mode.into(),
            workspace_results,
        })),
    }
}

/// `path:12:text` → (path, 12, text). Context lines (`path-12-text`) do not match.
fn content_line(line: &str) -> Option<(&str, i32, &str)> {
    let mut search = 0;
    while let Some(offset) = line[search..].find(':') {
        let colon = search + offset;
        let rest = &line[colon + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(':') && colon > 0 {
            let number = rest[..digits].parse().ok()?;
            let content = &rest[digits + 1..];
            return Some((
                &line[..colon],
                number,
                content.strip_prefix(' ').unwrap_or(content),
            ));
        }
        search = colon + 1;
    }
    None
}

fn ls(path: &str, output: &Output) -> wire::LsResult {
    if output.is_error {
        return wire::LsResult {
            result: Some(wire::ls_result::Result::Rejected(wire::PathRejected {
                path: path.to_owned(),
                reason: output.text.clone(),
            })),
        };
    }
    let base = path.trim_end_matches('/');
    let mut node = wire::LsDirectoryTreeNode {
        abs_path: path.to_owned(),
        children_were_processed: true,
        ..wire::LsDirectoryTreeNode::default()
    };
    for line in output.text.lines().map(str::trim) {
        if line.is_empty() || is_note(line) {
            continue;
        }
        match line.strip_suffix('/') {
            Some(dir) => node.children_dirs.push(wire::LsDirectoryTreeNode {
                abs_path: format!("{base}/{dir}"),
                ..wire::LsDirectoryTreeNode::default()
            }),
            None => node.children_files.push(wire::LsFile {
                name: line.to_owned(),
            }),
        }
    }
    node.num_files = count_i32(node.children_files.len());
    wire::LsResult {
        result: Some(wire::ls_result::Result::Success(wire::LsSuccess {
            directory_tree_root: Some(node),
        })),
    }
}

fn pi_arm<R>(
    output: &Output,
    success: fn(wire::PiOutput) -> R,
    error: fn(wire::ErrorText) -> R,
) -> R {
    if output.is_error {
        error(wire::ErrorText {
            error: output.text.clone(),
        })
    } else {
        success(wire::PiOutput {
            output: output.text.clone(),
        })
    }
}

/// A host note such as `[3 more matches]`, not a path.
fn is_note(line: &str) -> bool {
    line.starts_with('[') && line.ends_with(']')
}

fn count_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(text: &str, is_error: bool) -> Output {
        Output {
            text: text.into(),
            is_error,
        }
    }

    #[test]
    fn exit_markers_set_the_code_and_leave_the_output() {
        let shell = Shell::from(&out("boom\n\nCommand exited with code 2", true));
        assert_eq!(shell.exit_code, 2);
        assert_eq!(shell.stderr, "boom");
        assert_eq!(shell.stdout, "");
        assert_eq!(Shell::from(&out("ok\n", false)).exit_code, 0);
        assert_eq!(Shell::from(&out("bad", true)).exit_code, 1);
        assert_eq!(Shell::from(&out("x\nExit code: 3", false)).exit_code, 3);
        assert_eq!(Shell::from(&out("exit code is great", false)).exit_code, 0);
    }

    #[test]
    fn content_lines_parse_paths_with_colons() {
        assert_eq!(content_line("a.rs:12:fn x"), Some(("a.rs", 12, "fn x")));
        assert_eq!(content_line("C:/x.rs:3: y"), Some(("C:/x.rs", 3, "y")));
        assert_eq!(content_line("a.rs-12-ctx"), None);
        assert_eq!(content_line("no match"), None);
    }

    fn read_success(text: &str) -> wire::ReadSuccess {
        match read("f", &out(text, false)).result {
            Some(wire::read_result::Result::Success(success)) => success,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_host_truncation_note_marks_the_read_truncated_and_leaves_the_content() {
        let success =
            read_success("a\nb\n\n[Showing lines 1-2 of 5000. Use offset=3 to continue.]");
        assert_eq!(
            (
                success.content.as_str(),
                success.truncated,
                success.total_lines
            ),
            ("a\nb", true, 5000)
        );
        let success = read_success("a\n\n[40 more lines in file. Use offset=2 to continue.]");
        assert_eq!((success.truncated, success.total_lines), (true, 41));
        let success = read_success("[Line 1 is 60KB, exceeds 50KB limit. Use bash: sed]");
        assert_eq!((success.content.as_str(), success.truncated), ("", true));
        // A file whose last line merely looks like a note is not truncated.
        let success = read_success("a\n[x]\n");
        assert_eq!(
            (
                success.content.as_str(),
                success.truncated,
                success.total_lines
            ),
            ("a\n[x]\n", false, 2)
        );
    }

    #[test]
    fn a_more_lines_footer_whose_total_overflows_leaves_the_total_to_the_content() {
        // offset - 1 + more past i64::MAX: the total is unknown, not a panic or a wrapped number.
        let max = i64::MAX;
        let success = read_success(&format!(
            "a\nb\n\n[2 more lines in file. Use offset={max} to continue.]"
        ));
        assert_eq!((success.truncated, success.total_lines), (true, 2));
        let success = read_success(&format!(
            "a\n\n[{max} more lines in file. Use offset={max} to continue.]"
        ));
        assert_eq!((success.truncated, success.total_lines), (true, 1));
        // A negative count is no count.
        let success = read_success(&format!(
            "a\n\n[{} more lines in file. Use offset=0 to continue.]",
            i64::MIN
        ));
        assert_eq!((success.truncated, success.total_lines), (true, 1));
    }

    /// Any i64, with the edges (zero, one, the extremes) as likely as the rest.
    fn footer_number() -> impl proptest::strategy::Strategy<Value = i64> {
        proptest::prop_oneof![
            proptest::num::i64::ANY,
            -2..3_i64,
            i64::MAX - 2..=i64::MAX,
            i64::MIN..i64::MIN + 2,
        ]
    }

    proptest::proptest! {
        /// Any footer numbers: the parser never panics, and a total it states is exactly
        /// `offset - 1 + more` when that fits, never a negative or wrapped number.
        #[test]
        fn a_more_lines_footer_states_its_total_only_when_it_fits(
            more in footer_number(),
            offset in footer_number(),
        ) {
            let text = format!("x\n[{more} more lines in file. Use offset={offset} to continue.]");
            let (content, truncated) = truncation_note(&text).expect("a note");
            proptest::prop_assert_eq!(content.as_str(), "x");
            // `offset=` reads digits only, so a negative offset reads as no offset.
            let expected = (more >= 0 && offset >= 1)
                .then(|| (offset - 1).checked_add(more))
                .flatten()
                .and_then(|total| i32::try_from(total).ok());
            proptest::prop_assert_eq!(truncated.and_then(|t| t.total_lines), expected);
        }

        /// Arbitrary text ending in an arbitrary bracketed line never panics the parser, and
        /// what it keeps is a prefix of the text.
        #[test]
        fn any_footer_parses_without_panicking(head in ".{0,40}", note in "\\[.{0,60}\\]") {
            let text = format!("{head}\n{note}");
            if let Some((content, truncated)) = truncation_note(&text) {
                proptest::prop_assert!(text.starts_with(&content));
                let total = truncated.and_then(|t| t.total_lines);
                proptest::prop_assert!(total.is_none_or(|t| t >= 0));
            }
        }
    }

    #[test]
    fn delete_without_a_size_line_is_an_error() {
        let result = delete("f", &out("rm: cannot remove", false));
        assert!(matches!(
            result.result,
            Some(wire::delete_result::Result::Error(_))
        ));
        let result = delete("f", &out("D0:42\n", false));
        assert!(matches!(
            result.result,
            Some(wire::delete_result::Result::Success(wire::DeleteSuccess {
                file_size: 42,
                ..
            }))
        ));
    }
}
