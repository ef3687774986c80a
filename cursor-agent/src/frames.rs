//! Builders for the client frames a Run writes (PROTOCOL-AGENT §2).

use cursor_proto::agent::v1::{
    self as wire, AgentClientMessage, ExecClientControlMessage, ExecClientMessage,
    agent_client_message::Message as Client, exec_client_control_message::Message as Control,
};

pub(crate) fn client(message: Client) -> AgentClientMessage {
    AgentClientMessage {
        message: Some(message),
    }
}

/// A typed exec answer.
pub(crate) fn exec_reply(
    id: u32,
    exec_id: &str,
    message: wire::exec_client_message::Message,
) -> AgentClientMessage {
    client(Client::ExecClientMessage(ExecClientMessage {
        id,
        exec_id: exec_id.to_owned(),
        message: Some(message),
    }))
}

/// `stream_close{id}`: ends every exec reply, single-result ones included (§5.1).
pub(crate) fn stream_close(id: u32) -> AgentClientMessage {
    control(Control::StreamClose(wire::ExecClientStreamClose { id }))
}

/// `throw{id, error}` for an exec the client cannot answer in a typed way.
pub(crate) fn throw(id: u32, error: String) -> AgentClientMessage {
    control(Control::Throw(wire::ExecClientThrow { id, error }))
}

fn control(message: Control) -> AgentClientMessage {
    client(Client::ExecClientControlMessage(ExecClientControlMessage {
        message: Some(message),
    }))
}

/// `ExecClientHeartbeat{id}`: keeps one exec alive while the host runs its translation (§5.1).
pub(crate) fn exec_heartbeat(id: u32) -> AgentClientMessage {
    control(Control::Heartbeat(wire::ExecClientHeartbeat { id }))
}

/// The run-level empty keep-alive.
pub(crate) fn heartbeat() -> AgentClientMessage {
    client(Client::ClientHeartbeat(wire::ClientHeartbeat {}))
}

/// A blob's content for `get_blob_args`, same id.
pub(crate) fn blob(id: u32, data: Vec<u8>) -> AgentClientMessage {
    client(Client::KvClientMessage(wire::KvClientMessage {
        id,
        message: Some(wire::kv_client_message::Message::GetBlobResult(
            wire::GetBlobResult {
                blob_data: Some(data),
            },
        )),
    }))
}

/// The acknowledgement of a `set_blob_args`, same id.
pub(crate) fn blob_stored(id: u32) -> AgentClientMessage {
    client(Client::KvClientMessage(wire::KvClientMessage {
        id,
        message: Some(wire::kv_client_message::Message::SetBlobResult(
            wire::SetBlobResult { error: None },
        )),
    }))
}

/// The answer to an interaction query.
pub(crate) fn interaction(
    id: u32,
    result: wire::interaction_response::Result,
) -> AgentClientMessage {
    client(Client::InteractionResponse(wire::InteractionResponse {
        id,
        result: Some(result),
    }))
}
