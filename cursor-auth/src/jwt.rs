//! Reading a JWT's expiry without verifying it: only to know when to refresh.

use base64::Engine as _;
use base64::alphabet::URL_SAFE;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// base64url that accepts the payload with or without padding.
const LENIENT_URL_SAFE: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The token's `exp` claim in Unix milliseconds, or `None` when the token is not a JWT with a
/// positive numeric `exp`.
pub fn expiry_unix_ms(token: &str) -> Option<u64> {
    let mut parts = token.split('.');
    let (_header, payload, _signature) = (parts.next()?, parts.next()?, parts.next()?);
    let decoded = LENIENT_URL_SAFE.decode(payload).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&decoded).ok()?;
    let exp = claims.get("exp")?;
    let seconds = exp.as_u64().or_else(|| {
        exp.as_f64()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| s as u64)
    })?;
    (seconds > 0).then(|| seconds.saturating_mul(1000))
}

#[cfg(test)]
pub(crate) fn fake_jwt(claims: &str) -> String {
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}.signature",
        engine.encode(r#"{"alg":"HS256"}"#),
        engine.encode(claims)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_seconds_become_milliseconds() {
        assert_eq!(
            expiry_unix_ms(&fake_jwt(r#"{"sub":"u","exp":1767225600}"#)),
            Some(1_767_225_600_000)
        );
    }

    #[test]
    fn a_fractional_exp_is_truncated() {
        assert_eq!(
            expiry_unix_ms(&fake_jwt(r#"{"exp":1700000000.9}"#)),
            Some(1_700_000_000_000)
        );
    }

    #[test]
    fn padded_payloads_are_accepted() {
        let engine = base64::engine::general_purpose::URL_SAFE;
        let token = format!("h.{}.s", engine.encode(r#"{"exp":10}"#));
        assert!(token.contains('='), "precondition: the payload is padded");
        assert_eq!(expiry_unix_ms(&token), Some(10_000));
    }

    #[test]
    fn tokens_without_a_usable_exp_yield_none() {
        for token in [
            "opaque-token".to_owned(),
            "a.b".to_owned(),
            "a.!!!.c".to_owned(),
            fake_jwt("not json"),
            fake_jwt(r#"{"sub":"u"}"#),
            fake_jwt(r#"{"exp":"1767225600"}"#),
            fake_jwt(r#"{"exp":-5}"#),
            fake_jwt(r#"{"exp":0}"#),
        ] {
            assert_eq!(expiry_unix_ms(&token), None, "{token}");
        }
    }
}
