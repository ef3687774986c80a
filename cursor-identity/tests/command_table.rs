//! The allowed command table is small, fixed and matches the design's table.

use cursor_identity::{ALLOWED_COMMANDS, Platform};

#[test]
fn the_table_is_exactly_the_designed_commands() {
    let table: Vec<(Platform, Vec<&str>)> = ALLOWED_COMMANDS
        .iter()
        .map(|c| (c.platform(), c.argv().to_vec()))
        .collect();
    assert_eq!(
        table,
        vec![
            (
                Platform::Darwin,
                vec!["/usr/sbin/ioreg", "-rd1", "-c", "IOPlatformExpertDevice"]
            ),
            (
                Platform::Windows,
                vec![
                    "REG",
                    "QUERY",
                    r"HKLM\SOFTWARE\Microsoft\Cryptography",
                    "/v",
                    "MachineGuid"
                ]
            ),
            (
                Platform::FreeBsd,
                vec!["/bin/kenv", "-q", "smbios.system.uuid"]
            ),
            (
                Platform::FreeBsd,
                vec!["/sbin/sysctl", "-n", "kern.hostuuid"]
            ),
            (Platform::Linux, vec!["/bin/hostname"]),
        ]
    );
}
