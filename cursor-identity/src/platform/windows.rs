//! Windows: the `MachineGuid` registry value.

use crate::command::REG_QUERY_MACHINE_GUID;
use crate::{HostSource, IdentityError};

const VALUE_TYPE: &str = "REG_SZ";

pub(super) fn raw_machine_id(source: &dyn HostSource) -> Result<String, IdentityError> {
    let output = source.run(&REG_QUERY_MACHINE_GUID)?;
    parse_reg_query(&output).ok_or_else(|| IdentityError::Unparseable {
        program: REG_QUERY_MACHINE_GUID.program(),
        expected: "MachineGuid REG_SZ value",
    })
}

/// Takes what follows `REG_SZ` on the value's line, compacted and lower-cased.
fn parse_reg_query(output: &str) -> Option<String> {
    let (_, after_type) = output.split_once(VALUE_TYPE)?;
    let id = crate::digest::compact_lowercase(after_type.lines().next().unwrap_or(""));
    (!id.is_empty()).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guid_follows_reg_sz_and_crlf_is_dropped() {
        let output = "\r\nHKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Cryptography\r\n    MachineGuid    REG_SZ    6F9619FF-8B86-D011-B42D-00C04FC964FF\r\n\r\n";
        assert_eq!(
            parse_reg_query(output).as_deref(),
            Some("6f9619ff-8b86-d011-b42d-00c04fc964ff")
        );
    }

    #[test]
    fn output_without_a_string_value_is_rejected() {
        assert_eq!(
            parse_reg_query("ERROR: The system was unable to find the value.\r\n"),
            None
        );
    }

    #[test]
    fn an_empty_value_is_rejected() {
        assert_eq!(parse_reg_query("    MachineGuid    REG_SZ    \r\n"), None);
    }
}
