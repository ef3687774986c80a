//! The sixteen Connect error codes.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A Connect error code, as carried in end-of-stream JSON and unary error bodies.
///
/// Codes this version does not know deserialize as [`Code::Unknown`], as the Connect
/// protocol asks of clients.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// The operation was canceled, typically by the caller.
    Canceled,
    /// Unknown error, including codes this version does not recognize.
    Unknown,
    /// The client sent an invalid argument.
    InvalidArgument,
    /// The deadline expired before the operation finished.
    DeadlineExceeded,
    /// A requested entity was not found.
    NotFound,
    /// The entity the client tried to create already exists.
    AlreadyExists,
    /// The caller lacks permission for the operation.
    PermissionDenied,
    /// A resource (quota, rate, capacity) is exhausted.
    ResourceExhausted,
    /// The system is not in a state the operation requires.
    FailedPrecondition,
    /// The operation was aborted, typically by a concurrency conflict.
    Aborted,
    /// The operation went past a valid range.
    OutOfRange,
    /// The operation is not implemented or not enabled.
    Unimplemented,
    /// An internal invariant of the server broke.
    Internal,
    /// The service is unavailable; retrying may help.
    Unavailable,
    /// Unrecoverable data loss or corruption.
    DataLoss,
    /// The request carries no valid credentials.
    Unauthenticated,
}

impl Code {
    /// Every code, in the order of their gRPC numbers.
    pub const ALL: [Self; 16] = [
        Self::Canceled,
        Self::Unknown,
        Self::InvalidArgument,
        Self::DeadlineExceeded,
        Self::NotFound,
        Self::AlreadyExists,
        Self::PermissionDenied,
        Self::ResourceExhausted,
        Self::FailedPrecondition,
        Self::Aborted,
        Self::OutOfRange,
        Self::Unimplemented,
        Self::Internal,
        Self::Unavailable,
        Self::DataLoss,
        Self::Unauthenticated,
    ];

    /// The wire name (`resource_exhausted`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Canceled => "canceled",
            Self::Unknown => "unknown",
            Self::InvalidArgument => "invalid_argument",
            Self::DeadlineExceeded => "deadline_exceeded",
            Self::NotFound => "not_found",
            Self::AlreadyExists => "already_exists",
            Self::PermissionDenied => "permission_denied",
            Self::ResourceExhausted => "resource_exhausted",
            Self::FailedPrecondition => "failed_precondition",
            Self::Aborted => "aborted",
            Self::OutOfRange => "out_of_range",
            Self::Unimplemented => "unimplemented",
            Self::Internal => "internal",
            Self::Unavailable => "unavailable",
            Self::DataLoss => "data_loss",
            Self::Unauthenticated => "unauthenticated",
        }
    }

    /// Parses a wire name; anything unrecognized is [`Code::Unknown`].
    pub fn from_wire(name: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|code| code.as_str() == name)
            .unwrap_or(Self::Unknown)
    }

    /// The code a Connect client infers from a non-200 HTTP status without an error body
    /// (the Connect protocol's HTTP-to-code table).
    pub const fn from_http_status(status: u16) -> Self {
        match status {
            400 => Self::Internal,
            401 => Self::Unauthenticated,
            403 => Self::PermissionDenied,
            404 => Self::Unimplemented,
            429 | 502 | 503 | 504 => Self::Unavailable,
            _ => Self::Unknown,
        }
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Ok(Self::from_wire(&name))
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_its_wire_name_and_serde() {
        for code in Code::ALL {
            assert_eq!(Code::from_wire(code.as_str()), code);
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<Code>(&json).unwrap(), code);
        }
    }

    #[test]
    fn unrecognized_names_become_unknown() {
        assert_eq!(Code::from_wire("teapot"), Code::Unknown);
        assert_eq!(
            serde_json::from_str::<Code>("\"teapot\"").unwrap(),
            Code::Unknown
        );
    }

    #[test]
    fn http_statuses_map_per_the_connect_table() {
        assert_eq!(Code::from_http_status(401), Code::Unauthenticated);
        assert_eq!(Code::from_http_status(403), Code::PermissionDenied);
        assert_eq!(Code::from_http_status(404), Code::Unimplemented);
        assert_eq!(Code::from_http_status(503), Code::Unavailable);
        assert_eq!(Code::from_http_status(418), Code::Unknown);
    }
}
