//! Whatever the identity sources print, resolution returns a 64-hex id or a typed error.

use std::io;
use std::path::Path;

use cursor_identity::{AllowedCommand, HostSource, IdentityError, Platform, resolve};
use proptest::prelude::*;

/// Every file read and every command prints the same arbitrary text.
struct Garbage(String);

impl HostSource for Garbage {
    fn read_to_string(&self, _path: &Path) -> io::Result<String> {
        Ok(self.0.clone())
    }
    fn list_dir(&self, _path: &Path) -> io::Result<Vec<String>> {
        Ok(vec!["eth0".into(), self.0.clone()])
    }
    fn run(&self, _command: &'static AllowedCommand) -> Result<String, IdentityError> {
        Ok(self.0.clone())
    }
}

fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

proptest! {
    #[test]
    fn any_output_gives_hex_ids_or_a_typed_error(text in any::<String>()) {
        for platform in [Platform::Darwin, Platform::Linux, Platform::Windows, Platform::FreeBsd] {
            match resolve(platform, &Garbage(text.clone())) {
                Ok(identity) => {
                    prop_assert!(is_sha256_hex(&identity.machine_id));
                    if let Some(mac) = identity.mac_machine_id {
                        prop_assert!(is_sha256_hex(&mac));
                    }
                }
                Err(error) => prop_assert!(!error.to_string().is_empty()),
            }
        }
    }
}
