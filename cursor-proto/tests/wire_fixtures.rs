//! T-PROTO fixtures: frames written out byte by byte from the documented field numbers
//! (docs/PROTOCOL-AGENT.md), decoded with the generated types. Each fixture also carries a field
//! this crate does not declare, to prove unknown fields are skipped rather than fatal.
//!
//! A key byte is `(field << 3) | wire_type`, as a varint; wire type 0 is varint, 1 is fixed64,
//! 2 is length-delimited. The comment beside each key shows that arithmetic.

use cursor_proto::agent::v1::{
    AgentServerMessage, ExecServerMessage, InteractionUpdate, McpStateExecArgs,
    agent_server_message, exec_server_message, interaction_update, kv_server_message,
};
use prost::Message as _;

/// Decodes an `ExecServerMessage` fixture and returns its arm.
fn exec_arm(bytes: &[u8]) -> (u32, Option<exec_server_message::Message>) {
    let exec = ExecServerMessage::decode(bytes).expect("fixture decodes");
    (exec.id, exec.message)
}

#[test]
fn shell_stream_args_carries_description_and_timeout() {
    let bytes: &[u8] = &[
        0x08, 0x07, // (1 << 3) | 0: id = 7
        0x72, 0x19, // (14 << 3) | 2 = 114: shell_stream_args, 25 bytes
        0x0a, 0x04, b'e', b'c', b'h', b'o', // (1 << 3) | 2: command = "echo"
        0x12, 0x02, b'/', b'w', // (2 << 3) | 2: working_directory = "/w"
        0x18, 0x1e, // (3 << 3) | 0: timeout = 30
        0x98, 0x06, 0x01, // (99 << 3) | 0 = 792 = 0x98 0x06: unknown field 99 = 1
        0x7a, 0x08, b'R', b'u', b'n', b' ', b'e', b'c', b'h',
        b'o', // (15 << 3) | 2 = 122: description
    ];
    let (id, arm) = exec_arm(bytes);
    assert_eq!(id, 7);
    let Some(exec_server_message::Message::ShellStreamArgs(shell)) = arm else {
        panic!("expected shell_stream_args, got {arm:?}");
    };
    assert_eq!(shell.command, "echo");
    assert_eq!(shell.working_directory, "/w");
    assert_eq!(shell.timeout, 30);
    assert_eq!(shell.description, "Run echo");
    assert_eq!(shell.tool_call_id, "");
}

#[test]
fn glob_arrives_as_grep_args_with_empty_pattern_and_glob() {
    let bytes: &[u8] = &[
        0x08, 0x02, // id = 2
        0x2a, 0x0d, // (5 << 3) | 2 = 42: grep_args, 13 bytes
        0x0a, 0x00, // (1 << 3) | 2: pattern = "" (sent explicitly)
        0x1a, 0x04, b'*', b'.', b'r', b's', // (3 << 3) | 2 = 26: glob = "*.rs"
        0x72, 0x03, b't', b'c', b'1', // (14 << 3) | 2 = 114: field 14, not declared (skipped)
        0xa0, 0x06, 0x01, // (100 << 3) | 0 = 800: unknown field 100 = 1 (outside the arm)
    ];
    let (_, arm) = exec_arm(bytes);
    let Some(exec_server_message::Message::GrepArgs(grep)) = arm else {
        panic!("expected grep_args, got {arm:?}");
    };
    assert!(grep.pattern.is_empty());
    assert_eq!(grep.glob.as_deref(), Some("*.rs"));
    assert_eq!(grep.path, None);
}

#[test]
fn set_blob_args_with_id_but_no_data_decodes_as_absent_data() {
    let mut bytes = vec![
        0x22, 0x26, // (4 << 3) | 2 = 34: kv_server_message, 38 bytes
        0x08, 0x05, // id = 5
        0x1a, 0x22, // (3 << 3) | 2 = 26: set_blob_args, 34 bytes
        0x0a, 0x20, // (1 << 3) | 2: blob_id, 32 bytes
    ];
    bytes.extend_from_slice(&[0xab; 32]);
    let frame = AgentServerMessage::decode(bytes.as_slice()).expect("fixture decodes");
    let Some(agent_server_message::Message::KvServerMessage(kv)) = frame.message else {
        panic!("expected kv_server_message, got {:?}", frame.message);
    };
    assert_eq!(kv.id, 5);
    let Some(kv_server_message::Message::SetBlobArgs(set)) = kv.message else {
        panic!("expected set_blob_args, got {:?}", kv.message);
    };
    assert_eq!(set.blob_id, vec![0xab; 32]);
    assert_eq!(
        set.blob_data, None,
        "a dedup reference has no data, not empty data"
    );
}

#[test]
fn set_blob_args_with_empty_data_is_distinguishable_from_no_data() {
    let mut bytes = vec![0x0a, 0x20];
    bytes.extend_from_slice(&[0x01; 32]);
    bytes.extend_from_slice(&[0x12, 0x00]); // (2 << 3) | 2: blob_data = b"" present
    let set = cursor_proto::agent::v1::SetBlobArgs::decode(bytes.as_slice()).unwrap();
    assert_eq!(set.blob_data, Some(Vec::new()));
}

#[test]
fn server_message_with_ttft_breakdown_beside_its_oneof_keeps_both() {
    let bytes: &[u8] = &[
        0x0a, 0x04, // (1 << 3) | 2: interaction_update, 4 bytes
        0x0a, 0x02, // (1 << 3) | 2: text_delta, 2 bytes
        0x0a, 0x00, // text = "" (the arm is what matters)
        0x42, 0x09, // (8 << 3) | 2 = 66: ttft_breakdown, 9 bytes
        0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x29, 0x40, // (1 << 3) | 1: 12.5 as LE f64
        0xf8, 0x07, 0x01, // (127 << 3) | 0 = 1016: unknown field 127 = 1
    ];
    let frame = AgentServerMessage::decode(bytes).expect("fixture decodes");
    let ttft = frame
        .ttft_breakdown
        .expect("ttft_breakdown is a sibling field");
    assert_eq!(ttft.server_first_token_ms, 12.5);
    assert!(matches!(
        frame.message,
        Some(agent_server_message::Message::InteractionUpdate(
            InteractionUpdate {
                message: Some(interaction_update::Message::TextDelta(_)),
                ..
            }
        ))
    ));
}

#[test]
fn interaction_update_with_message_started_at_ms_keeps_its_arm() {
    let bytes: &[u8] = &[
        0xc8, 0x01, 0xe8,
        0x07, // (25 << 3) | 0 = 200 = 0xc8 0x01: message_started_at_ms = 1000
        0x72, 0x04, // (14 << 3) | 2 = 114: turn_ended, 4 bytes
        0x08, 0x0a, // input_tokens = 10
        0x10, 0x03, // output_tokens = 3
        0xf8, 0x01, 0x01, // (31 << 3) | 0 = 248: unknown field 31 = 1
    ];
    let update = InteractionUpdate::decode(bytes).expect("fixture decodes");
    assert_eq!(update.message_started_at_ms, Some(1000));
    let Some(interaction_update::Message::TurnEnded(ended)) = update.message else {
        panic!("expected turn_ended, got {:?}", update.message);
    };
    assert_eq!(ended.input_tokens, Some(10));
    assert_eq!(ended.output_tokens, Some(3));
    assert_eq!(ended.cache_read_tokens, None);
}

/// docs/PROTOCOL-AGENT.md §12.2: `routed_model = 24 {display_name}` names the model that served the
/// turn.
#[test]
fn interaction_update_routed_model_at_24_carries_the_display_name() {
    let bytes: &[u8] = &[
        0xc2, 0x01, 0x0a, // (24 << 3) | 2 = 194 = 0xc2 0x01: routed_model, 10 bytes
        0x0a, 0x08, b'G', b'r', b'o', b'k', b' ', b'4', b'.', b'7', // display_name
    ];
    let update = InteractionUpdate::decode(bytes).expect("fixture decodes");
    let Some(interaction_update::Message::RoutedModel(routed)) = update.message else {
        panic!("expected routed_model, got {:?}", update.message);
    };
    assert_eq!(routed.display_name, "Grok 4.7");
}

#[test]
fn accept_hook_additional_contexts_sits_beside_the_exec_arm() {
    let bytes: &[u8] = &[
        0x08, 0x01, // id = 1
        0xb8, 0x03, 0x01, // (55 << 3) | 0 = 440 = 0xb8 0x03: accept_hook_additional_contexts
        0x3a, 0x02, 0x0a, 0x00, // (7 << 3) | 2 = 58: read_args { path = "" }
    ];
    let exec = ExecServerMessage::decode(bytes).unwrap();
    assert_eq!(exec.accept_hook_additional_contexts, Some(true));
    assert!(matches!(
        exec.message,
        Some(exec_server_message::Message::ReadArgs(_))
    ));
}

// ---- Disputed ExecServerMessage numbers (docs/PROTOCOL-AGENT.md §5.3) ----------------------
//
// The older spec table gave 32..=36 ToolCall names. The extracted schema has no arm at 32..=35
// and mcp_state_exec_args at 36. One fixture per number, so a live capture can settle each.

/// An exec with id 9 and an empty length-delimited payload at `field` (a one-byte key).
fn exec_with_empty_arm(field: u8) -> [u8; 4] {
    [0x08, 0x09, (field << 3) | 2, 0x00]
}

#[test]
fn disputed_field_32_is_not_an_arm_of_the_extracted_schema() {
    // (32 << 3) | 2 = 258 needs two key bytes: 0x82 0x02.
    let (id, arm) = exec_arm(&[0x08, 0x09, 0x82, 0x02, 0x00]);
    assert_eq!(id, 9);
    assert_eq!(
        arm, None,
        "32 (reflect in the older table) decodes as an unknown arm"
    );
}

#[test]
fn disputed_field_33_is_not_an_arm_of_the_extracted_schema() {
    // (33 << 3) | 2 = 266 = 0x8a 0x02.
    let (_, arm) = exec_arm(&[0x08, 0x09, 0x8a, 0x02, 0x00]);
    assert_eq!(
        arm, None,
        "33 (setup_vm_environment in the older table) is unknown"
    );
}

#[test]
fn disputed_field_34_is_not_an_arm_of_the_extracted_schema() {
    // (34 << 3) | 2 = 274 = 0x92 0x02.
    let (_, arm) = exec_arm(&[0x08, 0x09, 0x92, 0x02, 0x00]);
    assert_eq!(
        arm, None,
        "34 (truncated_tool_call in the older table) is unknown"
    );
}

#[test]
fn disputed_field_35_is_not_an_arm_of_the_extracted_schema() {
    // (35 << 3) | 2 = 282 = 0x9a 0x02.
    let (_, arm) = exec_arm(&[0x08, 0x09, 0x9a, 0x02, 0x00]);
    assert_eq!(
        arm, None,
        "35 (start_grind_execution in the older table) is unknown"
    );
}

#[test]
fn disputed_field_36_is_mcp_state_exec_args() {
    // (36 << 3) | 2 = 290 = 0xa2 0x02.
    let (_, arm) = exec_arm(&[0x08, 0x09, 0xa2, 0x02, 0x00]);
    assert_eq!(
        arm,
        Some(exec_server_message::Message::McpStateExecArgs(
            McpStateExecArgs::default()
        ))
    );
}

/// docs/PROTOCOL-AGENT.md §12.1: `McpStateExecArgs { repeated string server_identifiers = 1; bool
/// kick_only = 2; }`.
#[test]
fn mcp_state_exec_args_carries_server_identifiers_and_kick_only() {
    let bytes: &[u8] = &[
        0x08, 0x04, // id = 4
        0xa2, 0x02, 0x08, // (36 << 3) | 2: mcp_state_exec_args, 8 bytes
        0x0a, 0x04, b'a', b'c', b'm', b'e', // server_identifiers = ["acme"]
        0x10, 0x01, // kick_only = true
    ];
    let (_, arm) = exec_arm(bytes);
    assert_eq!(
        arm,
        Some(exec_server_message::Message::McpStateExecArgs(
            McpStateExecArgs {
                server_identifiers: vec!["acme".into()],
                kick_only: true,
            }
        ))
    );
}

/// docs/PROTOCOL-AGENT.md §12.2: arm 52 carries shell-shaped args, and `machine_id = 57` beside the
/// oneof decodes without disturbing it.
#[test]
fn mini_swe_agent_bash_args_at_52_is_shell_shaped_beside_machine_id_57() {
    let bytes: &[u8] = &[
        0x08, 0x05, // id = 5
        0xa2, 0x03, 0x04, // (52 << 3) | 2 = 418 = 0xa2 0x03: 4 bytes
        0x0a, 0x02, b'l', b's', // command = "ls"
        0xca, 0x03, 0x02, b'm', b'1', // (57 << 3) | 2 = 458 = 0xca 0x03: machine_id = "m1"
    ];
    let message = ExecServerMessage::decode(bytes).unwrap();
    assert_eq!(message.machine_id.as_deref(), Some("m1"));
    let Some(exec_server_message::Message::MiniSweAgentBashArgs(args)) = message.message else {
        panic!("expected mini_swe_agent_bash_args, got {message:?}");
    };
    assert_eq!(args.command, "ls");
}

#[test]
fn pi_bash_args_at_46_carries_command_and_timeout() {
    let bytes: &[u8] = &[
        0x08, 0x03, // id = 3
        0xf2, 0x02, 0x0f, // (46 << 3) | 2 = 370 = 0xf2 0x02: pi_bash_args, 15 bytes
        0x0a, 0x04, b'l', b's', b' ', b'-', // command = "ls -"
        0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x24, 0x40, // (2 << 3) | 1: timeout = 10.0
    ];
    let (_, arm) = exec_arm(bytes);
    let Some(exec_server_message::Message::PiBashArgs(bash)) = arm else {
        panic!("expected pi_bash_args, got {arm:?}");
    };
    assert_eq!(bash.command, "ls -");
    assert_eq!(bash.timeout, Some(10.0));
}

#[test]
fn single_byte_key_arms_decode_to_their_documented_variant() {
    use exec_server_message::Message as M;
    type IsExpected = fn(&M) -> bool;
    let cases: [(u8, IsExpected); 5] = [
        (2, |m| matches!(m, M::ShellArgs(_))),
        (3, |m| matches!(m, M::WriteArgs(_))),
        (4, |m| matches!(m, M::DeleteArgs(_))),
        (10, |m| matches!(m, M::RequestContextArgs(_))),
        (11, |m| matches!(m, M::McpArgs(_))),
    ];
    for (field, is_expected) in cases {
        let (_, arm) = exec_arm(&exec_with_empty_arm(field));
        let arm = arm.unwrap_or_else(|| panic!("field {field} decodes to an arm"));
        assert!(is_expected(&arm), "field {field} decoded as {arm:?}");
    }
}
