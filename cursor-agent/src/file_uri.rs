//! `file://` URLs ↔ local paths, one way for the whole family (RFC 8089).
//!
//! Cursor names workspaces by `file://` URL and native requests by path. A path becomes a URL
//! with every byte outside the unreserved set and `/` percent-encoded (a space is `%20`), and
//! a Windows drive path `C:\work` becomes `file:///C:/work`; a URL becomes a path by the
//! reverse, so a workspace with a space resolves to the directory it names.

use std::path::Path;

/// The `file://` URL of `path` (absolute paths; a relative one is encoded as given).
///
/// ```
/// use cursor_agent::file_uri;
/// assert_eq!(file_uri::from_path("/home/me/my project".as_ref()), "file:///home/me/my%20project");
/// ```
pub fn from_path(path: &Path) -> String {
    from_path_str(&path.to_string_lossy())
}

/// [`from_path`] for a path given as text, Windows drive paths included (`C:\a` →
/// `file:///C:/a`), whatever platform this runs on.
pub fn from_path_str(path: &str) -> String {
    let windows_drive = is_drive(path.as_bytes());
    let path = if windows_drive {
        format!("/{}", path.replace('\\', "/"))
    } else {
        path.to_owned()
    };
    let mut uri = String::with_capacity(path.len() + 7);
    uri.push_str("file://");
    for (i, byte) in path.bytes().enumerate() {
        let keep = byte.is_ascii_alphanumeric()
            || matches!(byte, b'/' | b'-' | b'_' | b'.' | b'~')
            // The drive letter's colon (`/C:`) stays literal, as editors write it.
            || (windows_drive && i == 2 && byte == b':');
        if keep {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// The local path a `file://` URL names, as text: the `localhost` host allowed, percent
/// escapes decoded, `/C:/a` read as the Windows path `C:/a`. `None` for another scheme or
/// host, or escapes that are not UTF-8.
///
/// ```
/// use cursor_agent::file_uri;
/// assert_eq!(file_uri::to_path_str("file:///home/me/my%20project").as_deref(), Some("/home/me/my project"));
/// assert_eq!(file_uri::to_path_str("file:///C:/work").as_deref(), Some("C:/work"));
/// ```
pub fn to_path_str(uri: &str) -> Option<String> {
    let rest = uri
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("file://"))
        .map(|_| &uri[7..])?;
    let path = match rest.find('/') {
        Some(0) => rest,
        Some(at) if rest[..at].eq_ignore_ascii_case("localhost") => &rest[at..],
        None if rest.is_empty() => "/",
        _ => return None,
    };
    let decoded = percent_decode(path)?;
    let bytes = decoded.as_bytes();
    if bytes.len() >= 3 && bytes[0] == b'/' && is_drive(&bytes[1..]) {
        return Some(decoded[1..].to_owned());
    }
    Some(decoded)
}

/// True when `bytes` starts with a drive letter and a colon (`C:`).
fn is_drive(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_through_urls() {
        for path in [
            "/",
            "/work",
            "/home/me/my project",
            "/tmp/100%/ü-日本/#hash?q",
            "C:/Users/me/my project",
        ] {
            let uri = from_path_str(path);
            assert!(uri.starts_with("file:///"), "{uri}");
            assert!(!uri.contains(' '), "{uri}");
            assert_eq!(to_path_str(&uri).as_deref(), Some(path), "{uri}");
        }
    }

    #[test]
    fn windows_drive_paths_take_the_third_slash_and_forward_slashes() {
        assert_eq!(from_path_str(r"C:\work\a b"), "file:///C:/work/a%20b");
        assert_eq!(to_path_str("file:///c:/work").as_deref(), Some("c:/work"));
        assert_eq!(to_path_str("file:///C%3A/work").as_deref(), Some("C:/work"));
    }

    #[test]
    fn what_is_not_a_local_file_url_is_refused() {
        assert_eq!(to_path_str("https://example.com/a"), None);
        assert_eq!(to_path_str("file://server/share"), None);
        assert_eq!(to_path_str("file:///bad%zz"), None);
        assert_eq!(to_path_str("file:///bad%ff"), None, "not UTF-8");
        assert_eq!(to_path_str("file:///cut%2"), None);
        assert_eq!(to_path_str("file://localhost/etc").as_deref(), Some("/etc"));
        assert_eq!(to_path_str("FILE:///etc").as_deref(), Some("/etc"));
        assert_eq!(to_path_str("file://").as_deref(), Some("/"));
    }
}
