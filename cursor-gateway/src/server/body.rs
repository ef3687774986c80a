//! Reading a request body under its size and time limits and the body budget: a declared length
//! over the limit is a 413 before any byte is read, a declared length is reserved in the budget
//! before the body is read, and a chunked body reserves as it grows. The bytes are collected
//! into one buffer of the declared size, never copied again.

use axum::extract::Request;
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, header};
use http_body_util::BodyExt as _;

use crate::ApiError;
use crate::engine::{BodyPermit, Engine};

/// How much more a chunked body reserves each time it outgrows what it holds.
const STEP: usize = 256 * 1024;

/// The request's headers, its body, and the body's share of the budget (its length).
pub(crate) async fn read(
    engine: &Engine,
    namespace: &str,
    request: Request,
) -> Result<(HeaderMap, Bytes, BodyPermit), ApiError> {
    let limits = engine.limits();
    let max = limits.max_body_bytes;
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max as u64) {
        return Err(ApiError::too_large(max));
    }
    let declared = declared.map_or(0, |len| len as usize);
    let mut permit = engine.admission().permit(namespace);
    permit.grow(declared).await?;
    let (parts, mut body) = request.into_parts();
    let mut buffer = BytesMut::with_capacity(declared);
    let collect = async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|error| {
                ApiError::bad_request(
                    "invalid_body",
                    format!("the request body could not be read: {error}"),
                )
            })?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let len = buffer.len() + data.len();
            if len > max {
                return Err(ApiError::too_large(max));
            }
            if len > permit.bytes() {
                let want = len.max(permit.bytes() + STEP).min(max);
                permit.grow(want - permit.bytes()).await?;
            }
            buffer.extend_from_slice(&data);
        }
        Ok(())
    };
    match tokio::time::timeout(limits.body_read, collect).await {
        Err(_) => Err(ApiError::body_timeout()),
        Ok(Err(error)) => Err(error),
        Ok(Ok(())) => {
            // What the body did not use of its reservation goes back at once.
            let len = buffer.len();
            permit.resize(len).await?;
            Ok((parts.headers, buffer.freeze(), permit))
        }
    }
}
