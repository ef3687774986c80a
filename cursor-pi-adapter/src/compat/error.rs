//! Why a pi shape could not be mapped, classified for the host.

use cursor_proto::ir::{Classify, ErrorInfo, ErrorKind, NextStep};

use super::TESTED_PI_VERSIONS;

/// A pi value that does not have the shape the tested pi versions produce.
///
/// Every variant is a [`ErrorKind::Local`] problem: pi (or whatever built the value) handed
/// over something this adapter does not know, which an adapter or pi upgrade fixes. Convert it
/// with [`ErrorInfo::from`] to show it to the host.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompatError {
    /// The value is not JSON of the expected overall shape (a wrong type, a missing field).
    #[error("pi {what} is not shaped as pi {TESTED_PI_VERSIONS} sends it: {detail}")]
    Malformed {
        /// Which value was being read (`context`, `model`).
        what: &'static str,
        /// What did not fit, from the JSON reader.
        detail: String,
    },
    /// A transcript message has a role no tested pi version sends.
    #[error(
        "pi context message {index} has role {role:?}; pi {TESTED_PI_VERSIONS} sends only system, user, assistant and toolResult"
    )]
    UnknownRole {
        /// The message's position in `context.messages`.
        index: usize,
        /// The unexpected role.
        role: String,
    },
    /// A content block has a type no tested pi version puts in that role's messages.
    #[error(
        "pi context message {index} ({role}) has a content block of type {block_type:?}, which pi {TESTED_PI_VERSIONS} does not send there"
    )]
    UnknownBlock {
        /// The message's position in `context.messages`.
        index: usize,
        /// The message's role.
        role: &'static str,
        /// The unexpected block type.
        block_type: String,
    },
    /// A field that pi always sets is missing or has the wrong type.
    #[error(
        "pi context message {index} ({role}) lacks a valid {field:?}, which pi {TESTED_PI_VERSIONS} always sets"
    )]
    MissingField {
        /// The message's position in `context.messages`.
        index: usize,
        /// The message's role.
        role: &'static str,
        /// The field's name in pi's JSON.
        field: &'static str,
    },
    /// An image block's `data` is not standard base64.
    #[error("pi context message {index} has an image whose data is not base64: {reason}")]
    InvalidImage {
        /// The message's position in `context.messages`.
        index: usize,
        /// What the decoder reported.
        reason: String,
    },
}

impl Classify for CompatError {
    /// pi sent a shape this adapter does not know: a host drift, fixed on this machine.
    fn kind(&self) -> ErrorKind {
        ErrorKind::Local
    }

    fn next_step(&self) -> NextStep {
        NextStep::fix_config(format!(
            "use a pi version this adapter was tested with ({TESTED_PI_VERSIONS}) or upgrade cursor-pi-adapter"
        ))
    }
}

impl From<CompatError> for ErrorInfo {
    fn from(error: CompatError) -> Self {
        error.to_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compat_error_is_a_local_error_that_names_the_tested_versions() {
        let error = CompatError::UnknownRole {
            index: 2,
            role: "narrator".into(),
        };
        let info = ErrorInfo::from(error);
        assert_eq!(info.kind, ErrorKind::Local);
        assert!(info.message.contains("\"narrator\""), "{}", info.message);
        assert!(
            info.message.contains(TESTED_PI_VERSIONS),
            "{}",
            info.message
        );
        assert!(
            info.next_step.to_string().contains(TESTED_PI_VERSIONS),
            "{}",
            info.next_step
        );
    }
}
