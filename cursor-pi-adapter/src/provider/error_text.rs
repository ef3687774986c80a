//! Classified failures worded for pi: a next step always, and retry wording only where a retry
//! can help.

use cursor_proto::ir::{ErrorInfo, ErrorKind};
use cursor_transport::Refusal;

use super::LOGIN_NEXT_STEP;
use super::retry_words::{has_retry_trigger, without_retry_triggers};

/// Whether retrying the same turn may succeed: network failures and capacity refusals.
pub fn is_transient(info: &ErrorInfo) -> bool {
    match info.kind {
        ErrorKind::Network => true,
        ErrorKind::RemoteRefusal => info.next_step == Refusal::Capacity.next_step(),
        _ => false,
    }
}

/// The failure as pi should show it.
///
/// pi turns an error event's `errorMessage` (the [`ErrorInfo`] display:
/// `<kind> error: <message> (next step: <step>)`) into its retry decision by pattern (see
/// [`pi_would_retry`]). So:
///
/// - an auth failure always names `/login cursor` as its next step;
/// - a transient failure keeps its wording (its `network error:` prefix or rate-limit step is
///   what makes pi retry);
/// - any other failure has pi's transient wording reworded out of its message and next step,
///   so pi shows it at once instead of retrying a turn that cannot succeed.
pub fn for_pi(info: ErrorInfo) -> ErrorInfo {
    let mut info = info;
    if info.kind == ErrorKind::Auth && !info.next_step.contains("/login cursor") {
        info.next_step = LOGIN_NEXT_STEP.to_owned();
    }
    if !is_transient(&info) {
        info.message = without_retry_triggers(&info.message);
        info.next_step = without_retry_triggers(&info.next_step);
    }
    info
}

/// Whether pi 0.99.1–1.6.0 would retry a turn that failed with this `errorMessage`.
///
/// A mirror of pi's transient-wording patterns, kept to test the text this crate produces.
pub fn pi_would_retry(error_message: &str) -> bool {
    has_retry_trigger(error_message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_failure_stays_retryable() {
        let info = for_pi(ErrorInfo::new(
            ErrorKind::Network,
            "connection reset",
            "retry",
        ));
        assert!(pi_would_retry(&info.to_string()), "{info}");
    }

    #[test]
    fn an_auth_failure_names_login_and_is_not_retried() {
        let info = for_pi(ErrorInfo::new(
            ErrorKind::Auth,
            "server error unauthenticated: token expired (HTTP 401)",
            "sign in again",
        ));
        assert_eq!(info.next_step, LOGIN_NEXT_STEP);
        assert!(!pi_would_retry(&info.to_string()), "{info}");
    }

    #[test]
    fn a_capacity_refusal_is_retried_and_a_quota_refusal_is_not() {
        let capacity = for_pi(ErrorInfo::new(
            ErrorKind::RemoteRefusal,
            "server error resource_exhausted: try again later",
            Refusal::Capacity.next_step(),
        ));
        assert!(pi_would_retry(&capacity.to_string()), "{capacity}");
        let quota = for_pi(ErrorInfo::new(
            ErrorKind::RemoteRefusal,
            "server error resource_exhausted: usage limit reached (HTTP 429)",
            Refusal::Quota.next_step(),
        ));
        assert!(!pi_would_retry(&quota.to_string()), "{quota}");
    }
}
