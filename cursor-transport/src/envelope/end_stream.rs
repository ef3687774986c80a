//! The JSON payload of the end-of-stream frame, and the Connect error it may carry.

use std::collections::BTreeMap;

use base64::{
    Engine as _, alphabet,
    engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig},
};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{Code, EnvelopeError};

/// Response metadata: header-like keys, each with one or more values.
pub type Metadata = BTreeMap<String, Vec<String>>;

// Connect sends detail values unpadded; accept padded ones too.
const DETAIL_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The end-of-stream frame of a streaming response: success or a [`ConnectError`], plus metadata.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndStream {
    /// The error that ended the stream; `None` means the call succeeded.
    pub error: Option<ConnectError>,
    /// Trailing metadata (Connect carries trailers here, not in HTTP/2 trailers).
    pub metadata: Metadata,
}

/// A Connect error: code, message, typed details and the metadata that came with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectError {
    /// The error code.
    pub code: Code,
    /// The server's message, possibly empty.
    pub message: String,
    /// Typed error details.
    pub details: Vec<ErrorDetail>,
    /// Metadata sent with the error (trailers of the stream, or headers of a unary response).
    pub metadata: Metadata,
}

/// One error detail: a protobuf `Any` as Connect's JSON encodes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorDetail {
    /// The fully qualified protobuf message name (without a `type.googleapis.com/` prefix).
    pub type_name: String,
    /// The serialized protobuf message.
    pub value: Bytes,
    /// The server's optional JSON rendering of the message, for humans.
    pub debug: Option<serde_json::Value>,
}

#[derive(Deserialize, Serialize, Default)]
struct WireEndStream {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<WireError>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    metadata: Metadata,
}

#[derive(Deserialize, Serialize)]
struct WireError {
    #[serde(default = "unknown_code")]
    code: Code,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    details: Vec<WireDetail>,
}

#[derive(Deserialize, Serialize)]
struct WireDetail {
    #[serde(rename = "type")]
    type_name: String,
    #[serde(default)]
    value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    debug: Option<serde_json::Value>,
}

/// Serde would also accept a JSON array for a struct; Connect only ever sends an object.
fn parse_object<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, EnvelopeError> {
    if json.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(EnvelopeError::EndStreamJson(
            "expected a JSON object".to_owned(),
        ));
    }
    serde_json::from_slice(json).map_err(|err| EnvelopeError::EndStreamJson(err.to_string()))
}

fn unknown_code() -> Code {
    Code::Unknown
}

impl EndStream {
    /// Parses an end-of-stream payload. An empty payload counts as `{}`.
    pub fn parse(json: &[u8]) -> Result<Self, EnvelopeError> {
        if json.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self::default());
        }
        let wire: WireEndStream = parse_object(json)?;
        let error = wire
            .error
            .map(|e| e.into_error(wire.metadata.clone()))
            .transpose()?;
        Ok(Self {
            error,
            metadata: wire.metadata,
        })
    }

    /// A successful end of stream with no metadata.
    pub fn ok() -> Self {
        Self::default()
    }

    /// An end of stream carrying `error`; its metadata becomes the stream's.
    pub fn from_error(error: ConnectError) -> Self {
        Self {
            metadata: error.metadata.clone(),
            error: Some(error),
        }
    }

    /// The JSON payload Connect defines for this end of stream.
    pub fn to_json(&self) -> String {
        let wire = WireEndStream {
            error: self.error.as_ref().map(WireError::from_error),
            metadata: self.metadata.clone(),
        };
        // Serializing plain strings and maps cannot fail.
        serde_json::to_string(&wire).unwrap_or_else(|_| "{}".to_owned())
    }
}

impl ConnectError {
    /// An error with a code and message and nothing else.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: Vec::new(),
            metadata: Metadata::new(),
        }
    }

    /// Parses the JSON body of a failed unary call (`{"code":…,"message":…,"details":[…]}`).
    pub fn parse_unary_body(json: &[u8]) -> Result<Self, EnvelopeError> {
        let wire: WireError = parse_object(json)?;
        wire.into_error(Metadata::new())
    }

    /// The JSON body of a failed unary call carrying this error.
    pub fn to_unary_json(&self) -> String {
        serde_json::to_string(&WireError::from_error(self)).unwrap_or_else(|_| "{}".to_owned())
    }
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.message.is_empty() {
            write!(f, "{}", self.code)
        } else {
            write!(f, "{}: {}", self.code, self.message)
        }
    }
}

impl WireError {
    fn into_error(self, metadata: Metadata) -> Result<ConnectError, EnvelopeError> {
        let details = self
            .details
            .into_iter()
            .map(|d| {
                let value = DETAIL_BASE64
                    .decode(d.value.as_bytes())
                    .map_err(|err| EnvelopeError::EndStreamJson(format!("detail value: {err}")))?;
                Ok(ErrorDetail {
                    type_name: d.type_name,
                    value: Bytes::from(value),
                    debug: d.debug,
                })
            })
            .collect::<Result<_, EnvelopeError>>()?;
        Ok(ConnectError {
            code: self.code,
            message: self.message,
            details,
            metadata,
        })
    }

    fn from_error(error: &ConnectError) -> Self {
        Self {
            code: error.code,
            message: error.message.clone(),
            details: error
                .details
                .iter()
                .map(|d| WireDetail {
                    type_name: d.type_name.clone(),
                    value: DETAIL_BASE64.encode(&d.value),
                    debug: d.debug.clone(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_object_and_empty_payload_are_success() {
        assert_eq!(EndStream::parse(b"{}").unwrap(), EndStream::ok());
        assert_eq!(EndStream::parse(b"").unwrap(), EndStream::ok());
    }

    #[test]
    fn error_with_details_and_metadata_parses() {
        let json = br#"{"error":{"code":"resource_exhausted","message":"quota","details":[{"type":"a.B","value":"AQI","debug":{"x":1}}]},"metadata":{"x-trailer":["t1","t2"]}}"#;
        let end = EndStream::parse(json).unwrap();
        let error = end.error.unwrap();
        assert_eq!(error.code, Code::ResourceExhausted);
        assert_eq!(error.message, "quota");
        assert_eq!(error.details[0].type_name, "a.B");
        assert_eq!(error.details[0].value, Bytes::from_static(&[1, 2]));
        assert_eq!(error.details[0].debug, Some(serde_json::json!({"x": 1})));
        assert_eq!(error.metadata["x-trailer"], vec!["t1", "t2"]);
        assert_eq!(end.metadata["x-trailer"], vec!["t1", "t2"]);
    }

    #[test]
    fn padded_detail_values_are_accepted() {
        let end = EndStream::parse(
            br#"{"error":{"code":"internal","details":[{"type":"t","value":"AQI="}]}}"#,
        )
        .unwrap();
        assert_eq!(
            end.error.unwrap().details[0].value,
            Bytes::from_static(&[1, 2])
        );
    }

    #[test]
    fn unknown_codes_and_fields_are_tolerated() {
        let end = EndStream::parse(br#"{"error":{"code":"brand_new"},"extra":true}"#).unwrap();
        assert_eq!(end.error.unwrap().code, Code::Unknown);
    }

    #[test]
    fn malformed_json_is_an_error() {
        assert!(matches!(
            EndStream::parse(b"{"),
            Err(EnvelopeError::EndStreamJson(_))
        ));
        assert!(matches!(
            EndStream::parse(b"[]"),
            Err(EnvelopeError::EndStreamJson(_))
        ));
        assert!(matches!(
            EndStream::parse(
                br#"{"error":{"code":"internal","details":[{"type":"t","value":"!!"}]}}"#
            ),
            Err(EnvelopeError::EndStreamJson(_))
        ));
    }

    #[test]
    fn to_json_round_trips() {
        let mut error = ConnectError::new(Code::NotFound, "no model");
        error.details.push(ErrorDetail {
            type_name: "t".into(),
            value: Bytes::from_static(b"\x01"),
            debug: None,
        });
        error.metadata.insert("k".into(), vec!["v".into()]);
        let end = EndStream::from_error(error);
        assert_eq!(EndStream::parse(end.to_json().as_bytes()).unwrap(), end);
    }

    #[test]
    fn unary_error_body_parses() {
        let error =
            ConnectError::parse_unary_body(br#"{"code":"unauthenticated","message":"bad token"}"#)
                .unwrap();
        assert_eq!(error, ConnectError::new(Code::Unauthenticated, "bad token"));
        assert_eq!(
            ConnectError::parse_unary_body(error.to_unary_json().as_bytes()).unwrap(),
            error
        );
    }
}
