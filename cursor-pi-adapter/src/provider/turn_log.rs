//! What the last turn of this process did, for `/cursor-doctor`: pi keeps no such record, and
//! older pi versions have no field for the model that actually served a turn.

use std::sync::{Arc, Mutex, PoisonError};

use cursor_proto::ir::{Event, StopReason};
use serde::Serialize;

/// The last turn's summary: labels only, never content.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastTurn {
    /// The model pi asked for (its catalog id).
    pub model: String,
    /// The model the backend said served the turn ([`Event::ModelResolved`]), if it said.
    pub served_by: Option<String>,
    /// `stop`, `toolUse`, `length`, `error: <kind>` or `aborted`; empty while it runs.
    pub ended: String,
}

/// A shared, cheap-to-clone record of the last turn.
#[derive(Clone, Debug, Default)]
pub struct TurnLog(Arc<Mutex<Option<LastTurn>>>);

impl TurnLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// A turn asking `model` began.
    pub fn begin(&self, model: &str) {
        *self.lock() = Some(LastTurn {
            model: model.to_owned(),
            ..LastTurn::default()
        });
    }

    /// Notes what `event` says about the turn in progress.
    pub fn note(&self, event: &Event) {
        let mut slot = self.lock();
        let Some(turn) = slot.as_mut() else {
            return;
        };
        match event {
            Event::ModelResolved { model } => turn.served_by = Some(model.clone()),
            Event::Done { reason } => {
                turn.ended = match reason {
                    StopReason::ToolUse => "toolUse",
                    StopReason::Length => "length",
                    _ => "stop",
                }
                .into();
            }
            Event::Error(info) => turn.ended = format!("error: {}", info.kind),
            Event::Aborted => turn.ended = "aborted".into(),
            _ => {}
        }
    }

    /// The last turn, if this process ran one.
    pub fn last(&self) -> Option<LastTurn> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<LastTurn>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_proto::ir::{ErrorInfo, ErrorKind, NextStep};

    #[test]
    fn the_log_keeps_the_served_model_and_how_the_turn_ended() {
        let log = TurnLog::new();
        assert_eq!(log.last(), None);
        log.note(&Event::Aborted);
        assert_eq!(log.last(), None, "nothing is noted outside a turn");
        log.begin("grok-4.7");
        log.note(&Event::ModelResolved {
            model: "Grok 4.7 Fast".into(),
        });
        log.note(&Event::Done {
            reason: StopReason::ToolUse,
        });
        let last = log.last().unwrap();
        assert_eq!(last.served_by.as_deref(), Some("Grok 4.7 Fast"));
        assert_eq!(last.ended, "toolUse");
        log.begin("composer-2.5");
        log.note(&Event::Error(ErrorInfo::new(
            ErrorKind::Network,
            "reset",
            NextStep::Retry,
        )));
        let last = log.last().unwrap();
        assert_eq!(
            (last.model.as_str(), last.served_by),
            ("composer-2.5", None)
        );
        assert_eq!(last.ended, "error: network");
    }
}
