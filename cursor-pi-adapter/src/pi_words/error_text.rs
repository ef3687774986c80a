//! Classified failures worded for pi: a next step always, and retry wording only where a retry
//! can help.

use std::fmt;

use cursor_proto::ir::{ErrorInfo, ErrorKind, NextStep};

use super::retry_words::{has_retry_trigger, without_retry_triggers};
use super::{CHANNEL_ENV, LOGIN_NEXT_STEP};

/// A failure worded for pi: the kind, the message, and the next step as pi users act on it.
///
/// Its display is what pi shows as `errorMessage`: `<kind> error: <message> (next step: <step>)`.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PiError {
    /// The classification.
    pub kind: ErrorKind,
    /// What went wrong.
    pub message: String,
    /// The next step in pi's words (`run /login cursor`, ...).
    pub next_step: String,
}

impl fmt::Display for PiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} error: {} (next step: {})",
            self.kind, self.message, self.next_step
        )
    }
}

/// A typed next step in pi's words: pi's own commands and this provider's switches.
pub fn pi_next_step(step: &NextStep) -> String {
    match step {
        NextStep::Login => LOGIN_NEXT_STEP.to_owned(),
        NextStep::Retry => "retry the message; if it keeps failing, check the network".to_owned(),
        NextStep::SwitchModel => {
            format!("this account is not entitled to this channel or model: switch {CHANNEL_ENV} or the model")
        }
        NextStep::PickModel => {
            "pick a model and thinking level from the listed Cursor models (pi --list-models cursor)"
                .to_owned()
        }
        NextStep::UpdateCrates => {
            "update the cursor crates; if it persists, report it with a debug record (run pi with CURSOR_PROVIDER_DEBUG=1; records go to ~/.config/pi/agent/cursor-provider/debug.jsonl)"
                .to_owned()
        }
        NextStep::UseTool { tool } => format!(
            "ask again and tell the model to use the pi tool `{tool}` (Cursor native tools are disabled)"
        ),
        NextStep::RegisterTool => {
            "register a pi tool the model can use (for example bash), then ask again".to_owned()
        }
        NextStep::StartNewSession => {
            "start a new pi session or compact the conversation (/compact)".to_owned()
        }
        // pi compacts on its own when the error text reads as a context overflow; these words
        // match its overflow patterns (`prompt is too long`, `context_length_exceeded`).
        NextStep::CompactConversation => format!(
            "the prompt is too long for the model's context window ({CONTEXT_OVERFLOW_CODE}): pi compacts the conversation and sends the turn again (or run /compact)"
        ),
        other => other.to_string(),
    }
}

/// The code pi (and OpenAI-shaped clients) read as a context overflow.
const CONTEXT_OVERFLOW_CODE: &str = "context_length_exceeded";

/// Whether retrying the same turn may succeed: network failures and capacity refusals.
pub fn is_transient(info: &ErrorInfo) -> bool {
    match info.kind {
        ErrorKind::Network => true,
        ErrorKind::RemoteRefusal => info.next_step == NextStep::WaitAndRetry,
        _ => false,
    }
}

/// The failure as pi should show it.
///
/// pi turns an error event's `errorMessage` (the [`PiError`] display:
/// `<kind> error: <message> (next step: <step>)`) into its retry decision by pattern (see
/// [`pi_would_retry`]). So:
///
/// - an auth failure always names `/login cursor` as its next step;
/// - a transient failure keeps its wording (its `network error:` prefix or rate-limit step is
///   what makes pi retry);
/// - any other failure has pi's transient wording reworded out of its message and next step,
///   so pi shows it at once instead of retrying a turn that cannot succeed.
pub fn for_pi(info: &ErrorInfo) -> PiError {
    let next_step = if info.kind == ErrorKind::Auth {
        LOGIN_NEXT_STEP.to_owned()
    } else {
        pi_next_step(&info.next_step)
    };
    let mut error = PiError {
        kind: info.kind,
        message: info.message.clone(),
        next_step,
    };
    if !is_transient(info) {
        error.message = without_retry_triggers(&error.message);
        error.next_step = without_retry_triggers(&error.next_step);
    }
    error
}

/// Whether pi 0.99.1–1.6.0 would retry a turn that failed with this `errorMessage`.
///
/// A mirror of pi's transient-wording patterns, kept to test the text this crate produces.
pub fn pi_would_retry(error_message: &str) -> bool {
    has_retry_trigger(error_message)
}

/// Whether pi 0.99.1–1.6.0 would read this `errorMessage` as a context overflow, and so
/// compact the conversation and send the turn again.
///
/// A mirror of the part of pi's overflow patterns this crate's wording relies on (pi-ai
/// `isContextOverflow`: `prompt (is )?too long`, `context[_ ]length[_ ]exceeded`, unless the
/// text also says `rate limit` or `too many requests`), kept to test the text this crate produces.
pub fn pi_would_compact(error_message: &str) -> bool {
    let text = error_message.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
    !has(&["rate limit", "too many requests"])
        && has(&[
            "prompt is too long",
            "prompt too long",
            "context_length_exceeded",
            "context length exceeded",
        ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_transport::Refusal;

    #[test]
    fn a_context_overflow_reads_to_pi_as_one_and_is_not_retried() {
        let overflow = for_pi(&ErrorInfo::new(
            ErrorKind::RemoteRefusal,
            "server error resource_exhausted: Error",
            Refusal::ContextOverflow.next_step(),
        ));
        let shown = overflow.to_string();
        assert!(pi_would_compact(&shown), "{shown}");
        assert!(!pi_would_retry(&shown), "{shown}");
        for step in [
            Refusal::Quota,
            Refusal::Capacity,
            Refusal::Entitlement,
            Refusal::ClientVersionFloor,
        ]
        .map(Refusal::next_step)
        {
            let other = for_pi(&ErrorInfo::new(
                ErrorKind::RemoteRefusal,
                "server error resource_exhausted: Error",
                step,
            ));
            assert!(!pi_would_compact(&other.to_string()), "{other}");
        }
    }

    #[test]
    fn a_network_failure_stays_retryable() {
        let info = for_pi(&ErrorInfo::new(
            ErrorKind::Network,
            "connection reset",
            NextStep::Retry,
        ));
        assert!(pi_would_retry(&info.to_string()), "{info}");
    }

    #[test]
    fn an_auth_failure_names_login_and_is_not_retried() {
        let info = for_pi(&ErrorInfo::new(
            ErrorKind::Auth,
            "server error unauthenticated: token expired (HTTP 401)",
            NextStep::fix_input("sign in again"),
        ));
        assert_eq!(info.next_step, LOGIN_NEXT_STEP);
        assert!(!pi_would_retry(&info.to_string()), "{info}");
    }

    #[test]
    fn a_capacity_refusal_is_retried_and_a_quota_refusal_is_not() {
        let capacity = for_pi(&ErrorInfo::new(
            ErrorKind::RemoteRefusal,
            "server error resource_exhausted: try again later",
            Refusal::Capacity.next_step(),
        ));
        assert!(pi_would_retry(&capacity.to_string()), "{capacity}");
        let quota = for_pi(&ErrorInfo::new(
            ErrorKind::RemoteRefusal,
            "server error resource_exhausted: usage limit reached (HTTP 429)",
            Refusal::Quota.next_step(),
        ));
        assert!(!pi_would_retry(&quota.to_string()), "{quota}");
    }
}

#[cfg(test)]
mod wording_tests {
    use super::*;

    #[test]
    fn pi_words_the_typed_steps_with_its_own_commands() {
        assert_eq!(pi_next_step(&NextStep::Login), "run /login cursor");
        assert!(pi_next_step(&NextStep::SwitchModel).contains("CURSOR_PROVIDER_CHANNEL"));
        assert!(pi_next_step(&NextStep::UpdateCrates).contains("CURSOR_PROVIDER_DEBUG=1"));
        assert!(
            pi_next_step(&NextStep::UseTool {
                tool: "mcp_pi_bash".into()
            })
            .contains("pi tool `mcp_pi_bash`")
        );
    }
}
