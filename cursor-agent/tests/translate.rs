//! Native exec translation (PROTOCOL-AGENT §5.1): every translatable arm becomes a call of the
//! host tool that has the capability, whatever it is named and whatever its schema calls its
//! arguments, and the host's result comes back in the arm's exact native shape, then
//! `stream_close`.

mod common;

use std::time::Duration;

use common::{Harness, assert_stream_close, config, exec_reply};
use cursor_agent::{AgentEvent, ExecOutcome};
use cursor_proto::agent::v1::{
    self as w, AgentClientMessage, agent_client_message::Message as Client,
    exec_client_message::Message as Reply, exec_server_message::Message as Exec,
};
use cursor_proto::ir::{Conversation, Event, Message, StopReason, Tool, ToolCall, ToolResult};
use serde_json::{Value, json};

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Tool {
    Tool::new(
        name,
        description,
        json!({"type": "object", "properties": properties, "required": required}),
    )
}

/// pi's own names: bash, read, write, edit, grep, find, ls.
fn pi_host() -> Vec<Tool> {
    vec![
        tool(
            "bash",
            "Run a shell command",
            json!({"command": {"type": "string"}}),
            &["command"],
        ),
        tool(
            "read",
            "Read a file",
            json!({"path": {}, "offset": {}, "limit": {}}),
            &["path"],
        ),
        tool(
            "write",
            "Write a file",
            json!({"path": {}, "content": {}}),
            &["path", "content"],
        ),
        tool(
            "edit",
            "Edit a file",
            json!({"path": {}, "edits": {"type": "array", "items": {"type": "object", "properties": {"oldText": {}, "newText": {}}}}}),
            &["path", "edits"],
        ),
        tool(
            "grep",
            "Search file contents",
            json!({"pattern": {}, "path": {}, "glob": {}, "ignoreCase": {}}),
            &["pattern"],
        ),
        tool(
            "find",
            "Find files by glob",
            json!({"pattern": {}, "path": {}}),
            &["pattern"],
        ),
        tool("ls", "List a directory", json!({"path": {}}), &[]),
    ]
}

/// Another host's names and argument names for the same capabilities.
fn ide_host() -> Vec<Tool> {
    vec![
        tool(
            "run_command",
            "Runs a terminal command",
            json!({"cmd": {}, "cwd": {}}),
            &["cmd"],
        ),
        tool(
            "view_file",
            "Shows a file",
            json!({"file_path": {}}),
            &["file_path"],
        ),
        tool(
            "create_file",
            "Creates a file",
            json!({"filePath": {}, "contents": {}}),
            &["filePath", "contents"],
        ),
        tool(
            "search_code",
            "Ripgrep over the repo",
            json!({"query": {}, "directory": {}}),
            &["query"],
        ),
    ]
}

/// Only a command tool, named `exec`, taking `script`.
fn exec_only_host() -> Vec<Tool> {
    vec![tool("exec", "Execute", json!({"script": {}}), &["script"])]
}

/// Plain tools hidden behind pi's code mode.
fn codemode_host() -> Vec<Tool> {
    vec![
        tool(
            "codemode",
            "Code mode: run JavaScript that calls tools",
            json!({"code": {"type": "string"}}),
            &["code"],
        ),
        tool("todo", "Track tasks", json!({"items": {}}), &["items"]),
    ]
}

fn host(tools: Vec<Tool>) -> Harness {
    let mut conversation = Conversation::new("sys").with_message(Message::user_text("go"));
    conversation.tools = tools;
    Harness::with(config(), conversation)
}

/// Sends the exec, ends the leg, and returns the one tool call handed to the host.
fn call_for(h: &mut Harness, id: u32, exec: Exec) -> ToolCall {
    h.exec(id, exec);
    assert!(
        h.take_sent().is_empty(),
        "nothing is answered before the host ran the tool"
    );
    h.advance(Duration::from_millis(150));
    let events = h.take_events();
    let calls: Vec<ToolCall> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Ir(Event::ToolCall(call)) => Some(call.clone()),
            _ => None,
        })
        .collect();
    assert!(
        events.contains(&AgentEvent::Ir(Event::Done {
            reason: StopReason::ToolUse
        })),
        "{events:?}"
    );
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::Exec(audit) if audit.id == id
            && matches!(&audit.outcome, ExecOutcome::Translated { tool, .. } if *tool == calls[0].name))));
    assert_eq!(calls.len(), 1, "{events:?}");
    calls.into_iter().next().unwrap()
}

/// Submits the host's result for `call` after `after` and returns the frames written.
fn answer(
    h: &mut Harness,
    call: &ToolCall,
    text: &str,
    is_error: bool,
    after: Duration,
) -> Vec<AgentClientMessage> {
    h.now += after;
    h.run
        .submit_tool_results(
            vec![ToolResult::text(&call.id, &call.name, text, is_error)],
            h.now,
        )
        .expect("results accepted");
    h.drain();
    h.take_sent()
}

/// The replies of exec `id` followed by its `stream_close` (and nothing else).
fn replies(sent: &[AgentClientMessage], id: u32) -> Vec<Reply> {
    let (close, replies) = sent.split_last().expect("frames");
    assert_stream_close(close, id);
    replies
        .iter()
        .map(|frame| {
            let reply = exec_reply(frame);
            assert_eq!(
                (reply.id, reply.exec_id.as_str()),
                (id, format!("x{id}").as_str())
            );
            reply.message.clone().expect("typed")
        })
        .collect()
}

fn shell_args(command: &str) -> Exec {
    Exec::ShellArgs(w::ShellArgs {
        command: command.into(),
        working_directory: "/work".into(),
        timeout: 30,
        ..Default::default()
    })
}

#[test]
fn shell_runs_through_bash_and_answers_shell_success_with_timing() {
    let mut h = host(pi_host());
    let call = call_for(&mut h, 1, shell_args("ls -la"));
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("bash", &json!({"command": "cd -- '/work' && {\nls -la\n}"}))
    );
    let sent = answer(&mut h, &call, "a\nb\n", false, Duration::from_millis(850));
    assert_eq!(
        replies(&sent, 1),
        [Reply::ShellResult(w::ShellResult {
            result: Some(w::shell_result::Result::Success(w::ShellSuccess {
                command: "ls -la".into(),
                working_directory: "/work".into(),
                exit_code: 0,
                stdout: "a\nb\n".into(),
                stderr: String::new(),
                execution_time: 1000,
            })),
        })]
    );
}

#[test]
fn shell_uses_whatever_the_command_tool_is_called_and_its_argument_name() {
    let mut h = host(ide_host());
    let call = call_for(&mut h, 1, shell_args("make"));
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("run_command", &json!({"cmd": "make", "cwd": "/work"}))
    );
    let mut h = host(exec_only_host());
    let call = call_for(&mut h, 1, shell_args("make"));
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("exec", &json!({"script": "cd -- '/work' && {\nmake\n}"}))
    );
}

#[test]
fn a_failing_command_answers_the_failure_arm_with_the_parsed_exit_code() {
    let mut h = host(pi_host());
    let call = call_for(&mut h, 4, shell_args("false"));
    let sent = answer(
        &mut h,
        &call,
        "boom\n\nCommand exited with code 2",
        true,
        Duration::ZERO,
    );
    assert_eq!(
        replies(&sent, 4),
        [Reply::ShellResult(w::ShellResult {
            result: Some(w::shell_result::Result::Failure(w::ShellFailure {
                command: "false".into(),
                working_directory: "/work".into(),
                exit_code: 2,
                stdout: String::new(),
                stderr: "boom".into(),
                execution_time: 150,
                aborted: false,
            })),
        })]
    );
}

#[test]
fn shell_stream_answers_stdout_then_exit_and_never_a_start_event() {
    let mut h = host(pi_host());
    let call = call_for(
        &mut h,
        2,
        Exec::ShellStreamArgs(w::ShellArgs {
            command: "echo hi".into(),
            working_directory: "/work/sub".into(),
            ..Default::default()
        }),
    );
    assert_eq!(
        call.arguments,
        json!({"command": "cd -- '/work/sub' && {\necho hi\n}"})
    );
    let sent = answer(&mut h, &call, "hi\n", false, Duration::ZERO);
    let stream = |event| Reply::ShellStream(w::ShellStream { event: Some(event) });
    assert_eq!(
        replies(&sent, 2),
        [
            stream(w::shell_stream::Event::Stdout(w::ShellStreamStdout {
                data: "hi\n".into()
            })),
            stream(w::shell_stream::Event::Exit(w::ShellStreamExit {
                code: 0,
                cwd: "/work/sub".into(),
                aborted: false,
            })),
        ]
    );
    // A failing stream carries stderr and the code.
    let mut h = host(pi_host());
    let call = call_for(
        &mut h,
        3,
        Exec::ShellStreamArgs(w::ShellArgs {
            command: "x".into(),
            ..Default::default()
        }),
    );
    // No directory asked for: the command runs as is, and none is reported.
    assert_eq!(call.arguments, json!({"command": "x"}));
    let sent = answer(&mut h, &call, "nope\nexit code: 127", true, Duration::ZERO);
    assert_eq!(
        replies(&sent, 3),
        [
            stream(w::shell_stream::Event::Stderr(w::ShellStreamStderr {
                data: "nope".into()
            })),
            stream(w::shell_stream::Event::Exit(w::ShellStreamExit {
                code: 127,
                cwd: String::new(),
                aborted: false
            })),
        ]
    );
}

#[test]
fn read_maps_the_path_to_the_schemas_property_and_answers_read_success() {
    for (tools, name, args) in [
        (pi_host(), "read", json!({"path": "c.txt"})),
        (ide_host(), "view_file", json!({"file_path": "c.txt"})),
        (
            exec_only_host(),
            "exec",
            json!({"script": "cat -- 'c.txt'"}),
        ),
    ] {
        let mut h = host(tools);
        let call = call_for(
            &mut h,
            7,
            Exec::ReadArgs(w::ReadArgs {
                path: "c.txt".into(),
                ..Default::default()
            }),
        );
        assert_eq!((call.name.as_str(), &call.arguments), (name, &args));
        let sent = answer(&mut h, &call, "x\ny\n", false, Duration::ZERO);
        assert_eq!(
            replies(&sent, 7),
            [Reply::ReadResult(w::ReadResult {
                result: Some(w::read_result::Result::Success(w::ReadSuccess {
                    path: "c.txt".into(),
                    content: "x\ny\n".into(),
                    total_lines: 2,
                    file_size: 4,
                    truncated: false,
                })),
            })]
        );
    }
}

#[test]
fn a_read_error_answers_the_error_arm() {
    let mut h = host(pi_host());
    let call = call_for(
        &mut h,
        7,
        Exec::ReadArgs(w::ReadArgs {
            path: "gone".into(),
            ..Default::default()
        }),
    );
    let sent = answer(&mut h, &call, "ENOENT", true, Duration::ZERO);
    assert_eq!(
        replies(&sent, 7),
        [Reply::ReadResult(w::ReadResult {
            result: Some(w::read_result::Result::Error(w::PathError {
                path: "gone".into(),
                error: "ENOENT".into()
            })),
        })]
    );
}

#[test]
fn write_answers_lines_and_size_of_what_was_written() {
    for (tools, name, args) in [
        (
            pi_host(),
            "write",
            json!({"path": "n.txt", "content": "a\nb\nc"}),
        ),
        (
            ide_host(),
            "create_file",
            json!({"filePath": "n.txt", "contents": "a\nb\nc"}),
        ),
        (
            exec_only_host(),
            "exec",
            json!({"script": "printf '%s' 'a\nb\nc' > 'n.txt'"}),
        ),
    ] {
        let mut h = host(tools);
        let call = call_for(
            &mut h,
            3,
            Exec::WriteArgs(w::WriteArgs {
                path: "n.txt".into(),
                file_text: "a\nb\nc".into(),
                ..Default::default()
            }),
        );
        assert_eq!((call.name.as_str(), &call.arguments), (name, &args));
        let sent = answer(&mut h, &call, "Wrote 5 bytes", false, Duration::ZERO);
        assert_eq!(
            replies(&sent, 3),
            [Reply::WriteResult(w::WriteResult {
                result: Some(w::write_result::Result::Success(w::WriteSuccess {
                    path: "n.txt".into(),
                    lines_created: 3,
                    file_size: 5,
                })),
            })]
        );
    }
}

#[test]
fn delete_runs_the_size_composite_and_reports_the_parsed_size() {
    let mut h = host(ide_host());
    let call = call_for(
        &mut h,
        4,
        Exec::DeleteArgs(w::DeleteArgs {
            path: "old.log".into(),
            ..Default::default()
        }),
    );
    assert_eq!(call.name, "run_command");
    assert_eq!(
        call.arguments,
        json!({"cmd": "sz=$(wc -c < 'old.log') && rm -- 'old.log' && printf 'D0:%s\\n' \"$sz\""})
    );
    let sent = answer(&mut h, &call, "D0:1234\n", false, Duration::ZERO);
    assert_eq!(
        replies(&sent, 4),
        [Reply::DeleteResult(w::DeleteResult {
            result: Some(w::delete_result::Result::Success(w::DeleteSuccess {
                path: "old.log".into(),
                deleted_file: "old.log".into(),
                file_size: 1234,
                prev_content: String::new(),
            })),
        })]
    );
}

#[test]
fn grep_answers_the_content_union_grouped_by_file() {
    let mut h = host(pi_host());
    let call = call_for(
        &mut h,
        5,
        Exec::GrepArgs(w::GrepArgs {
            pattern: "fn".into(),
            path: Some("src".into()),
            glob: Some("*.rs".into()),
        }),
    );
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        (
            "grep",
            &json!({"pattern": "fn", "path": "src", "glob": "*.rs"})
        )
    );
    let sent = answer(
        &mut h,
        &call,
        "src/a.rs:3:fn main() {}\nsrc/a.rs:9:fn x() {}\nsrc/b.rs:1:fn y() {}\n",
        false,
        Duration::ZERO,
    );
    let line = |n, c: &str| w::GrepContentMatch {
        line_number: n,
        content: c.into(),
    };
    let expected = w::GrepUnionResult {
        result: Some(w::grep_union_result::Result::Content(
            w::GrepContentResult {
                matches: vec![
                    w::GrepFileMatch {
                        file: "src/a.rs".into(),
                        matches: vec![line(3, "fn main() {}"), line(9, "fn x() {}")],
                    },
                    w::GrepFileMatch {
                        file: "src/b.rs".into(),
                        matches: vec![line(1, "fn y() {}")],
                    },
                ],
                total_matched_lines: 3,
            },
        )),
    };
    assert_eq!(
        replies(&sent, 5),
        [Reply::GrepResult(w::GrepResult {
            result: Some(w::grep_result::Result::Success(w::GrepSuccess {
                pattern: "fn".into(),
                path: "src".into(),
                output_mode: "content".into(),
                workspace_results: [("/work".to_owned(), expected)].into_iter().collect(),
            })),
        })]
    );
    // The IDE host's search tool takes `query`/`directory`.
    let mut h = host(ide_host());
    let call = call_for(
        &mut h,
        5,
        Exec::GrepArgs(w::GrepArgs {
            pattern: "fn".into(),
            path: Some("src".into()),
            glob: None,
        }),
    );
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("search_code", &json!({"query": "fn", "directory": "src"}))
    );
}

#[test]
fn glob_is_grep_with_an_empty_pattern_and_answers_the_files_union() {
    let glob = || {
        Exec::GrepArgs(w::GrepArgs {
            pattern: String::new(),
            path: None,
            glob: Some("**/*.toml".into()),
        })
    };
    let mut h = host(pi_host());
    let call = call_for(&mut h, 6, glob());
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("find", &json!({"pattern": "**/*.toml"}))
    );
    let sent = answer(
        &mut h,
        &call,
        "Cargo.toml\nsub/Cargo.toml\n[2 results]\n",
        false,
        Duration::ZERO,
    );
    let files = w::GrepUnionResult {
        result: Some(w::grep_union_result::Result::Files(w::GrepFilesResult {
            files: vec!["Cargo.toml".into(), "sub/Cargo.toml".into()],
            total_files: 2,
        })),
    };
    assert_eq!(
        replies(&sent, 6),
        [Reply::GrepResult(w::GrepResult {
            result: Some(w::grep_result::Result::Success(w::GrepSuccess {
                pattern: String::new(),
                path: "/work".into(),
                output_mode: "files_with_matches".into(),
                workspace_results: [("/work".to_owned(), files)].into_iter().collect(),
            })),
        })]
    );
    // Without a find tool the command tool lists files and matches whole paths.
    let mut h = host(exec_only_host());
    let call = call_for(&mut h, 6, glob());
    assert_eq!(
        call.arguments,
        json!({"script": "find . -name .git -prune -o ! -type d -print | sed 's|^\\./||' | \
            { grep -E -- '^(([^/]*/)*[^/]*\\.toml)$' || [ $? -eq 1 ]; }"})
    );
}

/// Runs the command tool's script the way a host shell would, in `dir`.
fn run_script(call: &ToolCall, dir: &std::path::Path) -> std::process::Output {
    let script = call.arguments["script"].as_str().expect("a script");
    std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .expect("sh runs")
}

fn glob_args(glob: &str, path: Option<&str>) -> Exec {
    Exec::GrepArgs(w::GrepArgs {
        pattern: String::new(),
        path: path.map(str::to_owned),
        glob: Some(glob.into()),
    })
}

#[test]
fn the_glob_command_matches_whole_paths_with_real_glob_semantics() {
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "Cargo.toml",
        "sub/Cargo.toml",
        "sub/deep/x.toml",
        "a.rs",
        "sub/ab.rs",
    ] {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    }
    for (glob, path, expected) in [
        (
            "**/*.toml",
            None,
            &["Cargo.toml", "sub/Cargo.toml", "sub/deep/x.toml"][..],
        ),
        (
            "*.toml",
            None,
            &["Cargo.toml", "sub/Cargo.toml", "sub/deep/x.toml"],
        ),
        ("sub/*.toml", None, &["sub/Cargo.toml"]),
        ("?.rs", None, &["a.rs"]),
        (
            "*.{rs,toml}",
            Some("sub"),
            &["Cargo.toml", "ab.rs", "deep/x.toml"],
        ),
        (
            "[!a]*.toml",
            None,
            &["Cargo.toml", "sub/Cargo.toml", "sub/deep/x.toml"],
        ),
        ("nothing*", None, &[]),
    ] {
        let mut h = host(exec_only_host());
        let call = call_for(&mut h, 6, glob_args(glob, path));
        let output = run_script(&call, dir.path());
        assert!(output.status.success(), "{glob}: {output:?}");
        let mut found: Vec<String> = String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        found.sort();
        assert_eq!(found, expected, "{glob} in {path:?}");
    }
}

#[test]
fn a_dashed_glob_path_is_a_directory_name_and_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.toml"), "x").unwrap();
    let mut h = host(exec_only_host());
    let call = call_for(&mut h, 6, glob_args("*.toml", Some("-delete")));
    let output = run_script(&call, dir.path());
    assert!(!output.status.success(), "there is no directory `-delete`");
    assert!(dir.path().join("keep.toml").exists());
    std::fs::create_dir(dir.path().join("-delete")).unwrap();
    std::fs::write(dir.path().join("-delete/in.toml"), "x").unwrap();
    let output = run_script(&call, dir.path());
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "in.toml\n");
    assert!(dir.path().join("keep.toml").exists());
}

#[test]
fn the_shell_form_of_a_working_directory_runs_the_command_there() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub dir")).unwrap();
    let wd = dir.path().join("sub dir");
    let mut h = host(exec_only_host());
    let call = call_for(
        &mut h,
        1,
        Exec::ShellArgs(w::ShellArgs {
            command: "pwd; echo second # a comment".into(),
            working_directory: wd.to_str().unwrap().into(),
            ..Default::default()
        }),
    );
    let output = run_script(&call, dir.path());
    let real = std::fs::canonicalize(&wd).unwrap();
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!("{}\nsecond\n", real.display())
    );
    // A directory that does not exist runs nothing at all.
    let mut h = host(exec_only_host());
    let call = call_for(
        &mut h,
        1,
        Exec::ShellArgs(w::ShellArgs {
            command: "echo ran; echo ran too".into(),
            working_directory: dir.path().join("missing").to_str().unwrap().into(),
            ..Default::default()
        }),
    );
    let output = run_script(&call, dir.path());
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "");
}

#[test]
fn a_read_the_host_truncated_reports_truncated_and_the_files_line_count() {
    let mut h = host(pi_host());
    let call = call_for(
        &mut h,
        7,
        Exec::ReadArgs(w::ReadArgs {
            path: "big.txt".into(),
            ..Default::default()
        }),
    );
    let sent = answer(
        &mut h,
        &call,
        "1\n2\n\n[Showing lines 1-2 of 9000. Use offset=3 to continue.]",
        false,
        Duration::ZERO,
    );
    assert_eq!(
        replies(&sent, 7),
        [Reply::ReadResult(w::ReadResult {
            result: Some(w::read_result::Result::Success(w::ReadSuccess {
                path: "big.txt".into(),
                content: "1\n2".into(),
                total_lines: 9000,
                file_size: 3,
                truncated: true,
            })),
        })]
    );
}

#[test]
fn ls_answers_a_shallow_tree_with_directories_marked_by_a_slash() {
    let mut h = host(pi_host());
    let call = call_for(
        &mut h,
        8,
        Exec::LsArgs(w::LsArgs {
            path: "/work".into(),
            ..Default::default()
        }),
    );
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("ls", &json!({"path": "/work"}))
    );
    let sent = answer(
        &mut h,
        &call,
        "src/\nCargo.toml\nREADME.md\n",
        false,
        Duration::ZERO,
    );
    assert_eq!(
        replies(&sent, 8),
        [Reply::LsResult(w::LsResult {
            result: Some(w::ls_result::Result::Success(w::LsSuccess {
                directory_tree_root: Some(w::LsDirectoryTreeNode {
                    abs_path: "/work".into(),
                    children_dirs: vec![w::LsDirectoryTreeNode {
                        abs_path: "/work/src".into(),
                        ..Default::default()
                    }],
                    children_files: vec![
                        w::LsFile {
                            name: "Cargo.toml".into()
                        },
                        w::LsFile {
                            name: "README.md".into()
                        }
                    ],
                    children_were_processed: true,
                    num_files: 2,
                }),
            })),
        })]
    );
    let mut h = host(exec_only_host());
    let call = call_for(
        &mut h,
        8,
        Exec::LsArgs(w::LsArgs {
            path: "/work".into(),
            ..Default::default()
        }),
    );
    assert_eq!(call.arguments, json!({"script": "ls -1Ap -- '/work'"}));
}

#[test]
fn pi_arms_become_host_calls_and_answer_pi_output() {
    let output = |text: &str| w::PiOutput {
        output: text.into(),
    };
    let cases: Vec<(Exec, Vec<Tool>, &str, Value, Reply)> = vec![
        (
            Exec::PiBashArgs(w::PiBashExecArgs {
                command: "ls".into(),
                timeout: Some(5.0),
            }),
            ide_host(),
            "run_command",
            json!({"cmd": "ls"}),
            Reply::PiBashResult(w::PiBashExecResult {
                result: Some(w::pi_bash_exec_result::Result::Success(output("out"))),
            }),
        ),
        (
            Exec::PiReadArgs(w::PiReadExecArgs {
                path: "f".into(),
                offset: Some(3),
                limit: Some(2),
            }),
            pi_host(),
            "read",
            json!({"path": "f", "offset": 3, "limit": 2}),
            Reply::PiReadResult(w::PiReadExecResult {
                result: Some(w::pi_read_exec_result::Result::Success(output("out"))),
            }),
        ),
        (
            Exec::PiReadArgs(w::PiReadExecArgs {
                path: "f".into(),
                offset: Some(3),
                limit: Some(2),
            }),
            exec_only_host(),
            "exec",
            json!({"script": "sed -n '3,4p' -- 'f'"}),
            Reply::PiReadResult(w::PiReadExecResult {
                result: Some(w::pi_read_exec_result::Result::Success(output("out"))),
            }),
        ),
        (
            Exec::PiEditArgs(w::PiEditExecArgs {
                path: "f".into(),
                edits: vec![w::PiEditReplacement {
                    old_text: "a".into(),
                    new_text: "b".into(),
                }],
            }),
            pi_host(),
            "edit",
            json!({"path": "f", "edits": [{"oldText": "a", "newText": "b"}]}),
            Reply::PiEditResult(w::PiEditExecResult {
                result: Some(w::pi_edit_exec_result::Result::Success(output("out"))),
            }),
        ),
        (
            Exec::PiWriteArgs(w::PiWriteExecArgs {
                path: "f".into(),
                content: "c".into(),
            }),
            ide_host(),
            "create_file",
            json!({"filePath": "f", "contents": "c"}),
            Reply::PiWriteResult(w::PiWriteExecResult {
                result: Some(w::pi_write_exec_result::Result::Success(output("out"))),
            }),
        ),
        (
            Exec::PiGrepArgs(w::PiGrepExecArgs {
                pattern: "x".into(),
                ignore_case: Some(true),
                ..Default::default()
            }),
            pi_host(),
            "grep",
            json!({"pattern": "x", "ignoreCase": true}),
            Reply::PiGrepResult(w::PiGrepExecResult {
                result: Some(w::pi_grep_exec_result::Result::Success(output("out"))),
            }),
        ),
        (
            Exec::PiFindArgs(w::PiFindExecArgs {
                pattern: "*.md".into(),
                path: Some("docs".into()),
                limit: None,
            }),
            pi_host(),
            "find",
            json!({"pattern": "*.md", "path": "docs"}),
            Reply::PiFindResult(w::PiFindExecResult {
                result: Some(w::pi_find_exec_result::Result::Success(output("out"))),
            }),
        ),
        (
            Exec::PiLsArgs(w::PiLsExecArgs {
                path: None,
                limit: None,
            }),
            pi_host(),
            "ls",
            json!({"path": "."}),
            Reply::PiLsResult(w::PiLsExecResult {
                result: Some(w::pi_ls_exec_result::Result::Success(output("out"))),
            }),
        ),
    ];
    for (exec, tools, name, args, expected) in cases {
        let mut h = host(tools);
        let call = call_for(&mut h, 9, exec);
        assert_eq!((call.name.as_str(), &call.arguments), (name, &args));
        let sent = answer(&mut h, &call, "out", false, Duration::ZERO);
        assert_eq!(replies(&sent, 9), [expected]);
    }
    // A host error is the pi arm's error.
    let mut h = host(pi_host());
    let call = call_for(
        &mut h,
        9,
        Exec::PiBashArgs(w::PiBashExecArgs {
            command: "x".into(),
            timeout: None,
        }),
    );
    let sent = answer(&mut h, &call, "denied", true, Duration::ZERO);
    assert_eq!(
        replies(&sent, 9),
        [Reply::PiBashResult(w::PiBashExecResult {
            result: Some(w::pi_bash_exec_result::Result::Error(w::ErrorText {
                error: "denied".into()
            })),
        })]
    );
}

#[test]
fn without_a_capable_tool_the_typed_refusal_still_answers() {
    let mut h = host(vec![tool(
        "weather",
        "Forecast",
        json!({"city": {}}),
        &["city"],
    )]);
    h.exec(1, shell_args("ls"));
    let sent = h.take_sent();
    assert!(matches!(
        exec_reply(&sent[0]).message,
        Some(Reply::ShellResult(w::ShellResult {
            result: Some(w::shell_result::Result::Rejected(_))
        }))
    ));
    assert_stream_close(&sent[1], 1);
    // An edit needs an edit tool: a command tool cannot express it faithfully.
    let mut h = host(exec_only_host());
    h.exec(
        2,
        Exec::PiEditArgs(w::PiEditExecArgs {
            path: "f".into(),
            edits: vec![],
        }),
    );
    assert!(matches!(
        exec_reply(&h.take_sent()[0]).message,
        Some(Reply::PiEditResult(w::PiEditExecResult {
            result: Some(w::pi_edit_exec_result::Result::Rejected(_))
        }))
    ));
}

#[test]
fn a_translation_is_a_real_tool_call_and_resets_the_miss_count() {
    let mut h = host(pi_host());
    h.exec(
        1,
        Exec::FetchArgs(w::FetchArgs {
            url: "https://x.example.com".into(),
            ..Default::default()
        }),
    );
    h.exec(
        2,
        Exec::FetchArgs(w::FetchArgs {
            url: "https://y.example.com".into(),
            ..Default::default()
        }),
    );
    assert_eq!(h.run.misses(), 2);
    h.take_sent();
    call_for(&mut h, 3, shell_args("ls"));
    assert_eq!(h.run.misses(), 0);
}

#[test]
fn a_parked_exec_gets_a_heartbeat_every_three_seconds_until_answered() {
    let mut h = host(pi_host());
    let call = call_for(&mut h, 11, shell_args("sleep 10"));
    let exec_heartbeats = |sent: &[AgentClientMessage]| {
        sent.iter()
            .filter(|f| {
                matches!(
                    &f.message,
                    Some(Client::ExecClientControlMessage(
                        w::ExecClientControlMessage {
                            message: Some(w::exec_client_control_message::Message::Heartbeat(
                                w::ExecClientHeartbeat { id: 11 }
                            )),
                        }
                    ))
                )
            })
            .count()
    };
    // Issued at t=0; the debounce ended the leg at 150 ms. Beats are due at 3 s, 6 s and 9 s.
    // A driver sleeps until each deadline the run reports.
    let mut beats = Vec::new();
    while h.run.poll_timeout().expect("a deadline") <= h.start + Duration::from_secs(10) {
        h.advance_to_deadline();
        let sent = h.take_sent();
        assert!(exec_heartbeats(&sent) <= 1);
        if exec_heartbeats(&sent) == 1 {
            beats.push(h.now - h.start);
        }
    }
    assert_eq!(beats, [3, 6, 9].map(Duration::from_secs), "{beats:?}");
    let sent = answer(&mut h, &call, "done", false, Duration::ZERO);
    assert_eq!(exec_heartbeats(&sent), 0);
    h.advance(Duration::from_secs(4));
    assert_eq!(exec_heartbeats(&h.take_sent()), 0, "no beats once answered");
    assert!(!h.run.is_finished());
}

#[test]
fn a_codemode_host_gets_a_script_that_finds_its_executor_at_run_time() {
    let mut h = host(codemode_host());
    let call = call_for(&mut h, 1, shell_args("uname -a"));
    assert_eq!(call.name, "codemode");
    let code = call.arguments["code"].as_str().expect("a code string");
    assert!(
        code.contains(r#""args":{"command":"cd -- '/work' && {\nuname -a\n}"}"#),
        "{code}"
    );
    assert!(code.contains("for (const tool of ALL_TOOLS)"), "{code}");
    assert!(
        code.contains("ALL_TOOLS.map((t) => t.name).join"),
        "the roster on failure: {code}"
    );
    assert!(
        !code.contains("tools.bash"),
        "no executor name is fixed: {code}"
    );
    let sent = answer(
        &mut h,
        &call,
        "Script completed\nLinux box",
        false,
        Duration::ZERO,
    );
    assert!(matches!(
        &replies(&sent, 1)[0],
        Reply::ShellResult(w::ShellResult { result: Some(w::shell_result::Result::Success(s)) })
            if s.stdout == "Linux box" && s.exit_code == 0
    ));
    let mut h = host(codemode_host());
    let call = call_for(&mut h, 2, shell_args("false"));
    let sent = answer(
        &mut h,
        &call,
        "Script failed\nError: exit 1",
        false,
        Duration::ZERO,
    );
    assert!(matches!(
        &replies(&sent, 2)[0],
        Reply::ShellResult(w::ShellResult { result: Some(w::shell_result::Result::Failure(f)) })
            if f.stderr == "Error: exit 1" && f.exit_code == 1
    ));
}

#[test]
fn codemode_never_steals_a_match_from_a_plain_tool() {
    let mut tools = codemode_host();
    tools.extend(ide_host());
    let mut h = host(tools);
    let call = call_for(
        &mut h,
        1,
        Exec::ReadArgs(w::ReadArgs {
            path: "a".into(),
            ..Default::default()
        }),
    );
    assert_eq!(call.name, "view_file");
}
