//! Helpers shared by this crate's unit tests.

use bytes::Bytes;
use http::Response;

/// A canned server answer with `status` and `body`.
pub(crate) fn response(status: u16, body: &str) -> Response<Bytes> {
    Response::builder()
        .status(status)
        .body(Bytes::from(body.to_owned()))
        .unwrap()
}
