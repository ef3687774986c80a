//! Answering a turn whole: collect the leg, honour the clip, and check a reply format, with one
//! corrective user turn in the same conversation when the reply misses it.
//!
//! The conversation's history is recorded as the client will see it: the checked JSON (a code
//! fence dropped), not the raw reply; after a corrective turn, the corrected reply, with the
//! missed reply and the correction kept as an exchange the client never saw, so the client's
//! next turn resumes the remote conversation that really holds them.

use cursor_agent::AgentEvent;
use cursor_agent::ir::{
    AssistantContent, Conversation, ErrorInfo, ErrorKind, Event, Message, NextStep, UserContent,
};
use cursor_agent::session::ModelChoice;

use super::clip::{Clip, Cut};
use super::format::Format;
use super::turn_request::turn_vanished;
use super::{Engine, Finish, Leg, TurnGuard, TurnRequest, Whole, blocking};
use crate::ApiError;

impl Engine {
    /// Runs `turn` to its end and answers it whole.
    pub(crate) async fn answer(&self, turn: TurnRequest) -> Result<Whole, ApiError> {
        let TurnRequest {
            scope,
            mut conversation,
            model,
            clip,
            format,
            permit,
        } = turn;
        let format = match format {
            Some((spec, param)) => {
                let format = Format::compile(spec, param).await?;
                format.instruct(&mut conversation);
                Some(format)
            }
            None => None,
        };
        let guard = self.begin(&scope, &conversation, permit).await?;
        let mut clip_now = clip.clone();
        let (leg, cut) = collect(
            &guard,
            &guard.agent_view(&conversation),
            &model,
            &mut clip_now,
        )
        .await?;
        // A cut reply or a tool round is answered as it is: a format applies to a final reply.
        let Some(format) = format.filter(|_| cut.is_none() && leg.calls.is_empty()) else {
            return Ok(finished(guard, leg, cut, &clip_now, None).await);
        };
        let format = std::sync::Arc::new(format);
        let why = match check(&format, &leg.text).await? {
            Ok(text) => {
                let mut leg = leg;
                leg.text = text;
                return Ok(finished(guard, leg, None, &clip_now, None).await);
            }
            Err(why) => why,
        };
        tracing::info!(%why, "the reply missed the requested format; one corrective turn");
        let hidden = vec![
            Message::Assistant {
                content: vec![AssistantContent::Text {
                    text: leg.text.clone(),
                }],
            },
            Message::User {
                content: vec![UserContent::Text {
                    text: format!(
                        "That reply cannot be used: {why}. Send the reply again as only the JSON \
                         the system prompt asks for."
                    ),
                }],
            },
        ];
        let mut corrected = guard.agent_view(&conversation).into_owned();
        corrected.messages.extend(hidden.iter().cloned());
        let mut clip_again = clip.clone();
        let (leg, cut) = collect(&guard, &corrected, &model, &mut clip_again).await?;
        if cut.is_some() || !leg.calls.is_empty() {
            return Ok(finished(guard, leg, cut, &clip_again, Some(hidden)).await);
        }
        match check(&format, &leg.text).await? {
            Ok(text) => {
                let mut leg = leg;
                leg.text = text;
                Ok(finished(guard, leg, None, &clip_again, Some(hidden)).await)
            }
            Err(why) => {
                let mut error = ApiError::from_info(&ErrorInfo::new(
                    ErrorKind::RemoteRefusal,
                    format!(
                        "the model's reply did not match the requested format after one corrective turn: {why}"
                    ),
                    NextStep::Retry,
                ));
                error.code = "invalid_model_output".into();
                guard.failed(&error);
                Err(error)
            }
        }
    }
}

/// Checks `text` against `format` on the blocking pool.
async fn check(
    format: &std::sync::Arc<Format>,
    text: &str,
) -> Result<Result<String, String>, ApiError> {
    let (format, text) = (std::sync::Arc::clone(format), text.to_owned());
    blocking::run(move || format.check(&text)).await
}

/// Ends the turn with `leg`: recorded as the client sees it unless the engine cut it (a cut
/// hands the conversation back unrecorded, so the client's next request, with the cut text,
/// rebuilds).
async fn finished(
    guard: TurnGuard,
    leg: Leg,
    cut: Option<Cut>,
    clip: &Clip,
    hidden: Option<Vec<Message>>,
) -> Whole {
    if cut.is_none() {
        guard.finish(&leg, &leg.text, &leg.calls, hidden).await;
    }
    Whole {
        finish: Finish::of(&leg, cut),
        stop_sequence: clip.matched().map(str::to_owned),
        leg,
    }
}

/// Runs one leg of `guard`'s session to its end and collects it, cut by `clip`; an `Error` or
/// `Aborted` is the leg's failure. A cut stops reading (the Run is cancelled when the turn's
/// events are dropped).
async fn collect(
    guard: &TurnGuard,
    conversation: &Conversation,
    model: &ModelChoice,
    clip: &mut Clip,
) -> Result<(Leg, Option<Cut>), ApiError> {
    let mut turn = guard.session().turn(conversation, model);
    let mut leg = Leg::default();
    while let Some(event) = turn.next().await {
        match &event {
            AgentEvent::Ir(ir) => {
                if let Some(error) = leg.absorb(ir) {
                    guard.failed(&error);
                    return Err(error);
                }
                match ir {
                    Event::Reset => clip.reset(),
                    Event::TextDelta { text } => {
                        if let (_, Some(cut)) = clip.push(text) {
                            leg.text = clip.text().to_owned();
                            return Ok((leg, Some(cut)));
                        }
                    }
                    _ => {}
                }
            }
            other => guard.side_event(other),
        }
    }
    if leg.stop.is_none() {
        let error = turn_vanished();
        guard.failed(&error);
        return Err(error);
    }
    Ok((leg, None))
}
