//! A complete host from the README and rustdoc alone: one tool, tool rounds, resume across
//! processes. `tiny_host ORIGIN STATE_DIR PROMPT` (ORIGIN: a loopback replica's).
use cursor_agent::prelude::*;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let [_, origin, state, prompt] = <[String; 4]>::try_from(std::env::args().collect::<Vec<_>>())
        .map_err(|_| "usage: tiny_host ORIGIN STATE_DIR PROMPT")?;
    let session = AgentSession::builder(
        Client::new()?,
        Origin::parse(&origin)?,
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("tiny-host"))
    .workspace_uri("file:///tmp")
    .session_id("tiny")
    .handle_dir(&state)
    .build();
    // The transcript is the host's: kept beside the handle so a new process can resume.
    let saved = std::path::Path::new(&state).join("transcript.json");
    let mut conversation: Conversation = match std::fs::read(&saved) {
        Ok(bytes) => serde_json::from_slice(&bytes)?,
        Err(_) => Conversation::new("You are terse."),
    };
    conversation.tools = vec![Tool::new(
        "shout",
        "Upper-cases the text",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    )];
    conversation.messages.push(Message::user_text(prompt));
    let model = ModelChoice::new("composer-2.5");
    loop {
        let (mut text, mut calls, mut stop) = (String::new(), Vec::new(), None);
        let mut turn = session.turn(&conversation, &model);
        while let Some(event) = turn.next().await {
            match event {
                AgentEvent::Ir(Event::TextDelta { text: delta }) => text.push_str(&delta),
                AgentEvent::Ir(Event::ToolCall(call)) => calls.push(call),
                AgentEvent::Ir(Event::Done { reason }) => stop = Some(reason),
                AgentEvent::Ir(Event::Error(error)) => return Err(error.into()),
                _ => {}
            }
        }
        if stop != Some(StopReason::ToolUse) {
            println!("{text}");
            conversation.messages.push(Message::assistant_text(text));
            std::fs::write(&saved, serde_json::to_vec(&conversation)?)?;
            return Ok(());
        }
        let asked = Message::assistant_tool_calls(calls.clone());
        conversation.messages.push(asked);
        for call in calls {
            let text = call.arguments["text"].as_str().unwrap_or_default();
            let shouted = text.to_uppercase();
            println!("[tool {} -> {shouted}]", call.name);
            let result = ToolResult::text(call.id, call.name, shouted, false);
            conversation.messages.push(Message::ToolResult(result));
        }
    }
}
