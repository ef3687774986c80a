//! The optional `mac_machine_id`: a hash of the first real network interface address.

use std::path::Path;

use crate::{HostSource, Platform};

/// Where Linux lists network interfaces; each has an `address` file.
pub(crate) const NET_CLASS_DIR: &str = "/sys/class/net";

/// Addresses that name no real interface: unset, broadcast, and the macOS `bridge0`/iBridge
/// address that is identical on every Mac.
const PLACEHOLDER_MACS: [&str; 3] = [
    "00:00:00:00:00:00",
    "ff:ff:ff:ff:ff:ff",
    "ac:de:48:00:11:22",
];

/// SHA-256 hex of the first usable MAC, or `None` when the host shows none.
///
/// Only Linux exposes MACs without running a program; elsewhere this is `None`, which Cursor's
/// checksum accepts (the MAC part is optional), rather than widening the command table.
pub(crate) fn mac_machine_id(platform: Platform, source: &dyn HostSource) -> Option<String> {
    match platform {
        Platform::Linux => first_linux_mac(source).map(|mac| crate::digest::sha256_hex(&mac)),
        _ => None,
    }
}

fn first_linux_mac(source: &dyn HostSource) -> Option<String> {
    let mut interfaces = source.list_dir(Path::new(NET_CLASS_DIR)).ok()?;
    // Sorted so the choice does not depend on directory order.
    interfaces.sort();
    interfaces
        .iter()
        .filter(|name| name.as_str() != "lo")
        .find_map(|name| {
            let path = Path::new(NET_CLASS_DIR).join(name).join("address");
            let mac = source
                .read_to_string(&path)
                .ok()?
                .trim()
                .to_ascii_lowercase();
            is_usable_mac(&mac).then_some(mac)
        })
}

/// Six colon-separated hex octets that are not a placeholder.
fn is_usable_mac(mac: &str) -> bool {
    let octets: Vec<&str> = mac.split(':').collect();
    let well_formed = octets.len() == 6
        && octets
            .iter()
            .all(|octet| octet.len() == 2 && octet.bytes().all(|b| b.is_ascii_hexdigit()));
    well_formed && !PLACEHOLDER_MACS.contains(&mac)
}

#[cfg(test)]
mod tests {
    use super::is_usable_mac;

    #[test]
    fn real_macs_are_usable() {
        assert!(is_usable_mac("02:fc:00:00:00:01"));
    }

    #[test]
    fn placeholders_and_malformed_addresses_are_not() {
        for mac in [
            "00:00:00:00:00:00",
            "ff:ff:ff:ff:ff:ff",
            "ac:de:48:00:11:22",
            "",
            "02:fc:00:00:00",
            "02:fc:00:00:00:01:02",
            "zz:fc:00:00:00:01",
            "80:00:02:08:fe:80:00:00:00:00:00:00:00:00:00:00:00:00:00:00",
        ] {
            assert!(!is_usable_mac(mac), "{mac} was accepted");
        }
    }
}
