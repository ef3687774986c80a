//! macOS: the hardware UUID of the platform expert device.

use crate::command::IOREG_PLATFORM_EXPERT;
use crate::{HostSource, IdentityError};

const KEY: &str = "IOPlatformUUID";

pub(super) fn raw_machine_id(source: &dyn HostSource) -> Result<String, IdentityError> {
    let output = source.run(&IOREG_PLATFORM_EXPERT)?;
    parse_ioreg(&output).ok_or_else(|| IdentityError::Unparseable {
        program: IOREG_PLATFORM_EXPERT.program(),
        expected: "IOPlatformUUID value",
    })
}

/// Takes the rest of the `IOPlatformUUID` line and strips `=`, quotes and whitespace, as
/// Cursor does (`"IOPlatformUUID" = "ABC-…"` → `abc-…`).
fn parse_ioreg(output: &str) -> Option<String> {
    let (_, after_key) = output.split_once(KEY)?;
    let line = after_key.lines().next().unwrap_or("");
    let id: String = crate::digest::compact_lowercase(line)
        .chars()
        .filter(|c| *c != '=' && *c != '"')
        .collect();
    (!id.is_empty()).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "+-o J314sAP  <class IOPlatformExpertDevice, id 0x100000218>\n    {\n      \"IOPlatformSerialNumber\" = \"C02XXXXXX\"\n      \"IOPlatformUUID\" = \"0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9\"\n      \"IOPolledInterface\" = \"AppleARMWatchdogTimerHibernateHandler\"\n    }\n";

    #[test]
    fn the_uuid_is_taken_from_its_line_lowercased_without_quotes() {
        assert_eq!(
            parse_ioreg(SAMPLE).as_deref(),
            Some("0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9")
        );
    }

    #[test]
    fn output_without_the_key_is_rejected() {
        assert_eq!(parse_ioreg("+-o Root  <class IORegistryEntry>\n"), None);
    }

    #[test]
    fn a_key_with_an_empty_value_is_rejected() {
        assert_eq!(parse_ioreg("  \"IOPlatformUUID\" = \"\"\n"), None);
    }
}
