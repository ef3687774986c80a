//! Model ids whose form the live server and the catalog disagree on (PROTOCOL-AGENT §13.7),
//! played by the replica (`Replica::set_model_id_form`) and answered through `AgentSession`:
//! the catalog's form goes first, the other form once on `not_found` before the host saw
//! anything, and a second `not_found` asks the host to pick a model its catalog lists.

mod host;

use std::sync::Arc;
use std::time::Instant;

use cursor_agent::AgentEvent;
use cursor_agent::HostProfile;
use cursor_agent::session::{AgentSession, ModelChoice, StaticToken};
use cursor_agent::testing::{ModelIdForm, Replica, ReplicaServer, RunRecord, Script};
use cursor_proto::ir::{
    Conversation, ErrorKind, Event, Message, NextStep, Tool, ToolCall, ToolResult,
};
use cursor_transport::Client;
use host::{ended_normally, error_of, text};
use serde_json::json;

fn session(replica: &ReplicaServer) -> AgentSession {
    AgentSession::builder(
        Client::new().expect("client"),
        replica.origin(),
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("acme"))
    .workspace_uri("file:///work")
    .build()
}

fn ask(text: &str) -> Conversation {
    let mut conversation = Conversation::new("").with_message(Message::user_text(text));
    conversation.tools = vec![Tool::new(
        "bash",
        "Run a shell command",
        json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    )];
    conversation
}

fn host_answer(call: &ToolCall) -> ToolResult {
    ToolResult::text(call.id.clone(), call.name.clone(), "hi", false)
}

/// A whole turn as a host runs it, tool legs answered by `host_answer`.
async fn whole_turn(
    session: &AgentSession,
    conversation: Conversation,
    model: &ModelChoice,
) -> Vec<AgentEvent> {
    host::whole_turn(session, conversation, model, host_answer).await
}

fn models(runs: &[RunRecord]) -> Vec<(&str, &str)> {
    runs.iter()
        .map(|run| (run.model.as_str(), run.outcome.as_str()))
        .collect()
}

/// What cursor-catalog's `Catalog::resolve` gives for these families (the session cannot see
/// the catalog: the host copies its answer into the choice).
fn choice(slug: &str, alternate: &str) -> ModelChoice {
    ModelChoice::new(slug)
        .with_alternate(Some(alternate.to_owned()))
        .with_known_models(vec![
            "composer-2.5".into(),
            "grok-4.7".into(),
            "kimi-k3".into(),
        ])
}

#[tokio::test]
async fn a_suffix_only_model_asked_with_an_effort_gets_its_suffixed_slug_and_no_retry() {
    let replica = Replica::start().await.unwrap();
    replica.set_model_id_form("kimi-k3", ModelIdForm::SuffixedOnly);
    let events = whole_turn(
        &session(&replica),
        ask("ping"),
        &choice("kimi-k3-high", "kimi-k3"),
    )
    .await;
    assert!(ended_normally(&events), "{events:?}");
    assert_eq!(text(&events), "pong");
    assert_eq!(models(&replica.runs()), [("kimi-k3-high", "completed")]);
}

#[tokio::test]
async fn a_bare_only_model_listed_suffixed_is_retried_once_with_the_bare_id_before_any_event() {
    let replica = Replica::start().await.unwrap();
    replica.set_model_id_form("grok-4.7", ModelIdForm::BareOnly);
    let started = Instant::now();
    let events = whole_turn(
        &session(&replica),
        ask("ping"),
        &choice("grok-4.7-high", "grok-4.7"),
    )
    .await;
    let took = started.elapsed();
    assert!(ended_normally(&events), "{events:?}");
    assert_eq!(text(&events), "pong");
    // Nothing of the refused Run reached the host: no error, no reset, no warning.
    assert!(
        !events.iter().any(|e| matches!(
            e,
            AgentEvent::Ir(Event::Error(_) | Event::Reset | Event::Warning(_))
        )),
        "{events:?}"
    );
    assert_eq!(
        models(&replica.runs()),
        [
            ("grok-4.7-high", "model-not-found"),
            ("grok-4.7", "completed")
        ]
    );
    println!("bare-only model listed suffixed: 1 extra Run, the turn took {took:?}");
}

#[tokio::test]
async fn a_bare_id_the_server_takes_only_suffixed_is_retried_with_the_suffixed_form() {
    let replica = Replica::start().await.unwrap();
    replica.set_model_id_form("kimi-k3", ModelIdForm::SuffixedOnly);
    let events = whole_turn(
        &session(&replica),
        ask("ping"),
        &choice("kimi-k3", "kimi-k3-high"),
    )
    .await;
    assert!(ended_normally(&events), "{events:?}");
    assert_eq!(
        models(&replica.runs()),
        [
            ("kimi-k3", "model-not-found"),
            ("kimi-k3-high", "completed")
        ]
    );
}

#[tokio::test]
async fn a_not_found_after_a_visible_event_is_not_retried() {
    let replica = Replica::start().await.unwrap();
    // The host sees the tool call (and runs it) before the Run ends `not_found`.
    replica.script(Script::StaleAfterTools);
    let events = whole_turn(
        &session(&replica),
        ask("run: echo hi"),
        &choice("grok-4.7-high", "grok-4.7"),
    )
    .await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Ir(Event::ToolCall(_)) | AgentEvent::Exec(_))),
        "{events:?}"
    );
    let info = error_of(&events);
    assert_ne!(info.next_step, NextStep::PickModel, "{info:?}");
    assert_eq!(replica.runs().len(), 1, "{:?}", replica.runs());
}

#[tokio::test]
async fn a_second_not_found_asks_to_pick_a_model_the_catalog_lists() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::NotFound);
    replica.script(Script::NotFound);
    let events = whole_turn(
        &session(&replica),
        ask("ping"),
        &choice("grok-4.7-high", "grok-4.7"),
    )
    .await;
    let info = error_of(&events);
    assert_eq!(info.kind, ErrorKind::RemoteRefusal, "{info:?}");
    assert_eq!(info.next_step, NextStep::PickModel, "{info:?}");
    for name in ["grok-4.7-high", "grok-4.7", "composer-2.5", "kimi-k3"] {
        assert!(info.message.contains(name), "{name}: {info:?}");
    }
    assert_eq!(
        models(&replica.runs()),
        [("grok-4.7-high", "not-found"), ("grok-4.7", "not-found")]
    );
}

#[tokio::test]
async fn without_an_alternate_a_model_not_found_is_not_retried() {
    let replica = Replica::start().await.unwrap();
    replica.set_model_id_form("grok-4.7", ModelIdForm::BareOnly);
    let events = whole_turn(
        &session(&replica),
        ask("ping"),
        &ModelChoice::new("grok-4.7-high"),
    )
    .await;
    let info = error_of(&events);
    assert_eq!(info.next_step, NextStep::PickModel, "{info:?}");
    assert_eq!(replica.runs().len(), 1);
}

#[tokio::test]
async fn the_form_that_worked_goes_first_in_the_sessions_later_turns() {
    let replica = Replica::start().await.unwrap();
    replica.set_model_id_form("grok-4.7", ModelIdForm::BareOnly);
    let session = session(&replica);
    let model = choice("grok-4.7-high", "grok-4.7");
    assert!(ended_normally(
        &whole_turn(&session, ask("ping"), &model).await
    ));
    assert!(ended_normally(
        &whole_turn(&session, ask("again"), &model).await
    ));
    assert_eq!(
        models(&replica.runs()),
        [
            ("grok-4.7-high", "model-not-found"),
            ("grok-4.7", "completed"),
            ("grok-4.7", "completed")
        ]
    );
}

#[tokio::test]
async fn a_learned_form_the_server_stops_taking_gives_way_to_the_hosts_form_again() {
    let replica = Replica::start().await.unwrap();
    replica.set_model_id_form("grok-4.7", ModelIdForm::BareOnly);
    let session = session(&replica);
    let model = choice("grok-4.7-high", "grok-4.7");
    assert!(ended_normally(
        &whole_turn(&session, ask("ping"), &model).await
    ));
    // The rule flips (it changes over time, PROTOCOL-AGENT §13.7).
    replica.set_model_id_form("grok-4.7", ModelIdForm::SuffixedOnly);
    assert!(ended_normally(
        &whole_turn(&session, ask("again"), &model).await
    ));
    assert!(ended_normally(
        &whole_turn(&session, ask("and again"), &model).await
    ));
    assert_eq!(
        models(&replica.runs()),
        [
            ("grok-4.7-high", "model-not-found"),
            ("grok-4.7", "completed"),
            ("grok-4.7", "model-not-found"),
            ("grok-4.7-high", "completed"),
            ("grok-4.7-high", "completed")
        ]
    );
}
