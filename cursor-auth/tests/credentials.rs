//! T-AUTH: credentials as pi stores them, and that tokens never print.

use cursor_auth::Credentials;

const PI_ENTRY: &str = r#"{"access":"acc-XYZ","refresh":"ref-XYZ","expires":1767225300000,"extra":"kept","type":"oauth"}"#;

#[test]
fn a_pi_auth_json_entry_round_trips_with_its_extra_fields() {
    let credentials = Credentials::from_json(PI_ENTRY).unwrap();
    assert_eq!(credentials.access, "acc-XYZ");
    assert_eq!(credentials.refresh, "ref-XYZ");
    assert_eq!(credentials.expires, 1_767_225_300_000);
    assert_eq!(credentials.extra["extra"], "kept");

    let written: serde_json::Value = serde_json::to_value(&credentials).unwrap();
    let original: serde_json::Value = serde_json::from_str(PI_ENTRY).unwrap();
    assert_eq!(written, original);
}

#[test]
fn new_credentials_serialize_as_an_oauth_entry() {
    let value = serde_json::to_value(Credentials::new("a", "r", 5)).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"type": "oauth", "access": "a", "refresh": "r", "expires": 5})
    );
}

#[test]
fn an_entry_without_a_type_is_read_as_oauth() {
    // pi's OAuthCredentials objects (as handed to refreshToken) may omit `type`.
    let credentials =
        Credentials::from_json(r#"{"access":"a","refresh":"r","expires":1}"#).unwrap();
    assert_eq!(serde_json::to_value(&credentials).unwrap()["type"], "oauth");
}

#[test]
fn entries_missing_a_token_are_rejected() {
    assert!(Credentials::from_json(r#"{"type":"oauth","refresh":"r","expires":1}"#).is_err());
    assert!(Credentials::from_json(r#"{"type":"oauth","access":"a","expires":1}"#).is_err());
}

#[test]
fn debug_and_display_never_show_the_tokens() {
    let mut credentials = Credentials::new("access-SECRET-1", "refresh-SECRET-2", 42);
    credentials.extra.insert("userId".into(), "u-1".into());
    let debug = format!("{credentials:?}");
    let pretty = format!("{credentials:#?}");
    let display = credentials.to_string();
    for shown in [&debug, &pretty, &display] {
        assert!(!shown.contains("SECRET"), "{shown}");
    }
    assert!(debug.contains("42") && debug.contains("userId"), "{debug}");
}
