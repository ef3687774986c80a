//! Linux: the machine-id files read directly (no process), `hostname` only if both are absent.

use std::path::Path;

use super::first_line_compact;
use crate::command::HOSTNAME;
use crate::{HostSource, IdentityError, Platform};

/// Read in this order; the first with a non-empty first line wins (Cursor's order).
pub(crate) const MACHINE_ID_FILES: [&str; 2] = ["/var/lib/dbus/machine-id", "/etc/machine-id"];

pub(super) fn raw_machine_id(source: &dyn HostSource) -> Result<String, IdentityError> {
    let mut tried = Vec::new();
    for path in MACHINE_ID_FILES {
        match source.read_to_string(Path::new(path)) {
            Ok(text) => {
                let id = first_line_compact(&text);
                if !id.is_empty() {
                    return Ok(id);
                }
                tried.push(format!("{path} is empty"));
            }
            // Unreadable counts as absent, as it does for Cursor's own `cat … 2>/dev/null`.
            Err(error) => tried.push(format!("{path}: {error}")),
        }
    }
    match source.run(&HOSTNAME) {
        Ok(output) => {
            let id = first_line_compact(&output);
            if !id.is_empty() {
                return Ok(id);
            }
            tried.push(format!("`{}` printed nothing", HOSTNAME.program()));
        }
        Err(error) => tried.push(error.to_string()),
    }
    Err(IdentityError::SourceMissing {
        platform: Platform::Linux,
        tried: tried.join("; "),
    })
}
