//! FreeBSD: the SMBIOS system UUID, else the kernel's host UUID.

use crate::command::{KENV_SYSTEM_UUID, SYSCTL_HOST_UUID};
use crate::{HostSource, IdentityError, Platform};

pub(super) fn raw_machine_id(source: &dyn HostSource) -> Result<String, IdentityError> {
    let mut tried = Vec::new();
    for command in [&KENV_SYSTEM_UUID, &SYSCTL_HOST_UUID] {
        match source.run(command) {
            Ok(output) => {
                let id = crate::digest::compact_lowercase(&output);
                if !id.is_empty() {
                    return Ok(id);
                }
                tried.push(format!("`{}` printed nothing", command.program()));
            }
            Err(error) => tried.push(error.to_string()),
        }
    }
    Err(IdentityError::SourceMissing {
        platform: Platform::FreeBsd,
        tried: tried.join("; "),
    })
}
