//! Every platform adapter against scripted fake hosts (T-IDENT), runnable on any OS.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::path::Path;

use cursor_identity::{
    AllowedCommand, HOSTNAME, HostSource, IOREG_PLATFORM_EXPERT, IdentityError, KENV_SYSTEM_UUID,
    Platform, REG_QUERY_MACHINE_GUID, SYSCTL_HOST_UUID, resolve,
};
use sha2::{Digest, Sha256};

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A scripted host: files, one directory listing, and command outputs.
#[derive(Default)]
struct FakeHost {
    files: HashMap<String, String>,
    net_interfaces: Option<Vec<String>>,
    outputs: Vec<(&'static AllowedCommand, Option<String>)>,
    ran: RefCell<Vec<&'static str>>,
}

impl FakeHost {
    fn file(mut self, path: &str, content: &str) -> Self {
        self.files.insert(path.to_owned(), content.to_owned());
        self
    }
    fn nic(mut self, name: &str, address: Option<&str>) -> Self {
        self.net_interfaces
            .get_or_insert_with(Vec::new)
            .push(name.to_owned());
        if let Some(address) = address {
            self = self.file(&format!("/sys/class/net/{name}/address"), address);
        }
        self
    }
    /// `None` scripts a non-zero exit.
    fn command(mut self, command: &'static AllowedCommand, output: Option<&str>) -> Self {
        self.outputs.push((command, output.map(str::to_owned)));
        self
    }
}

impl HostSource for FakeHost {
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        let key = path.to_str().expect("utf-8 test paths");
        self.files
            .get(key)
            .cloned()
            .ok_or_else(|| io::ErrorKind::NotFound.into())
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        assert_eq!(
            path,
            Path::new("/sys/class/net"),
            "only the NIC directory is listed"
        );
        self.net_interfaces
            .clone()
            .ok_or_else(|| io::ErrorKind::NotFound.into())
    }
    fn run(&self, command: &'static AllowedCommand) -> Result<String, IdentityError> {
        self.ran.borrow_mut().push(command.program());
        let scripted = self
            .outputs
            .iter()
            .find(|(entry, _)| std::ptr::eq(*entry, command));
        match scripted {
            Some((_, Some(output))) => Ok(output.clone()),
            Some((_, None)) => Err(IdentityError::CommandFailed {
                program: command.program(),
                status: "exit status: 1".into(),
            }),
            None => Err(IdentityError::Spawn {
                program: command.program(),
                source: io::ErrorKind::NotFound.into(),
            }),
        }
    }
}

const DBUS: &str = "/var/lib/dbus/machine-id";
const ETC: &str = "/etc/machine-id";

// ---- Linux ----

#[test]
fn linux_prefers_the_dbus_machine_id_and_runs_no_command() {
    let host = FakeHost::default()
        .file(DBUS, "aaaa1111\n")
        .file(ETC, "bbbb2222\n");
    let identity = resolve(Platform::Linux, &host).unwrap();
    assert_eq!(identity.machine_id, sha256_hex("aaaa1111"));
    assert!(host.ran.borrow().is_empty(), "ran {:?}", host.ran.borrow());
}

#[test]
fn linux_falls_back_to_etc_machine_id_when_dbus_is_absent() {
    let host = FakeHost::default().file(ETC, "bbbb2222\n");
    assert_eq!(
        resolve(Platform::Linux, &host).unwrap().machine_id,
        sha256_hex("bbbb2222")
    );
    assert!(host.ran.borrow().is_empty());
}

#[test]
fn linux_skips_an_empty_dbus_file() {
    let host = FakeHost::default().file(DBUS, "\n").file(ETC, "bbbb2222");
    assert_eq!(
        resolve(Platform::Linux, &host).unwrap().machine_id,
        sha256_hex("bbbb2222")
    );
}

#[test]
fn linux_trims_whitespace_lowercases_and_keeps_only_the_first_line() {
    let host = FakeHost::default().file(ETC, "  AbCd 12\t34\r\nsecond line\n");
    assert_eq!(
        resolve(Platform::Linux, &host).unwrap().machine_id,
        sha256_hex("abcd1234")
    );
}

#[test]
fn linux_runs_hostname_only_when_both_files_are_absent() {
    let host = FakeHost::default().command(&HOSTNAME, Some("Build-Box\n"));
    assert_eq!(
        resolve(Platform::Linux, &host).unwrap().machine_id,
        sha256_hex("build-box")
    );
    assert_eq!(*host.ran.borrow(), vec!["/bin/hostname"]);
}

#[test]
fn linux_without_any_source_is_a_typed_error_naming_what_was_tried() {
    let host = FakeHost::default().command(&HOSTNAME, Some("\n"));
    let error = resolve(Platform::Linux, &host).unwrap_err();
    let IdentityError::SourceMissing { platform, tried } = &error else {
        panic!("expected SourceMissing, got {error:?}");
    };
    assert_eq!(*platform, Platform::Linux);
    assert!(
        tried.contains(DBUS) && tried.contains(ETC) && tried.contains("hostname"),
        "{tried}"
    );
}

#[test]
fn linux_mac_id_is_the_hash_of_the_first_usable_interface_in_name_order() {
    let host = FakeHost::default()
        .file(ETC, "id")
        .nic("wlan0", Some("AA:BB:CC:DD:EE:02\n"))
        .nic("lo", Some("00:00:00:00:00:00\n"))
        .nic("docker0", Some("00:00:00:00:00:00\n"))
        .nic("eth0", Some("aa:bb:cc:dd:ee:01\n"));
    let identity = resolve(Platform::Linux, &host).unwrap();
    assert_eq!(
        identity.mac_machine_id,
        Some(sha256_hex("aa:bb:cc:dd:ee:01"))
    );
}

#[test]
fn linux_mac_id_skips_loopback_placeholders_malformed_and_unreadable_addresses() {
    let host = FakeHost::default()
        .file(ETC, "id")
        .nic("a-noaddress", None)
        .nic("b-broadcast", Some("ff:ff:ff:ff:ff:ff"))
        .nic("c-ibridge", Some("ac:de:48:00:11:22"))
        .nic("d-tunnel", Some("\n"))
        .nic("lo", Some("02:00:00:00:00:99"))
        .nic("z-real", Some("02:FC:00:00:00:01"));
    let identity = resolve(Platform::Linux, &host).unwrap();
    assert_eq!(
        identity.mac_machine_id,
        Some(sha256_hex("02:fc:00:00:00:01"))
    );
}

#[test]
fn linux_without_usable_interfaces_still_resolves_without_a_mac_id() {
    let no_dir = FakeHost::default().file(ETC, "id");
    assert_eq!(
        resolve(Platform::Linux, &no_dir).unwrap().mac_machine_id,
        None
    );
    let only_placeholders = FakeHost::default()
        .file(ETC, "id")
        .nic("lo", Some("00:00:00:00:00:00"));
    assert_eq!(
        resolve(Platform::Linux, &only_placeholders)
            .unwrap()
            .mac_machine_id,
        None
    );
}

// ---- macOS ----

const IOREG_OUTPUT: &str = "+-o MacBookPro18,3  <class IOPlatformExpertDevice, id 0x10000020b, registered>\n    {\n      \"IOPlatformSerialNumber\" = \"C02ABCDEF\"\n      \"IOPlatformUUID\" = \"5A1B0C2D-3E4F-5061-7283-94A5B6C7D8E9\"\n      \"model\" = <\"MacBookPro18,3\">\n    }\n";

#[test]
fn darwin_hashes_the_lowercased_platform_uuid() {
    let host = FakeHost::default().command(&IOREG_PLATFORM_EXPERT, Some(IOREG_OUTPUT));
    let identity = resolve(Platform::Darwin, &host).unwrap();
    assert_eq!(
        identity.machine_id,
        sha256_hex("5a1b0c2d-3e4f-5061-7283-94a5b6c7d8e9")
    );
    assert_eq!(
        identity.mac_machine_id, None,
        "no MAC source without another command"
    );
}

#[test]
fn darwin_output_without_the_uuid_is_unparseable() {
    let host = FakeHost::default().command(&IOREG_PLATFORM_EXPERT, Some("+-o Root\n"));
    let error = resolve(Platform::Darwin, &host).unwrap_err();
    assert!(matches!(
        error,
        IdentityError::Unparseable {
            program: "/usr/sbin/ioreg",
            ..
        }
    ));
}

#[test]
fn darwin_passes_a_failed_ioreg_through_as_its_typed_error() {
    let host = FakeHost::default().command(&IOREG_PLATFORM_EXPERT, None);
    let error = resolve(Platform::Darwin, &host).unwrap_err();
    assert!(matches!(
        error,
        IdentityError::CommandFailed {
            program: "/usr/sbin/ioreg",
            ..
        }
    ));
}

// ---- Windows ----

#[test]
fn windows_hashes_the_machine_guid_after_reg_sz() {
    let output = "\r\nHKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Cryptography\r\n    MachineGuid    REG_SZ    C0FFEE00-1234-5678-9ABC-DEF012345678\r\n\r\n";
    let host = FakeHost::default().command(&REG_QUERY_MACHINE_GUID, Some(output));
    let identity = resolve(Platform::Windows, &host).unwrap();
    assert_eq!(
        identity.machine_id,
        sha256_hex("c0ffee00-1234-5678-9abc-def012345678")
    );
}

#[test]
fn windows_without_the_value_is_an_error_not_an_invented_id() {
    let host = FakeHost::default().command(&REG_QUERY_MACHINE_GUID, None);
    assert!(matches!(
        resolve(Platform::Windows, &host).unwrap_err(),
        IdentityError::CommandFailed { program: "REG", .. }
    ));
    let garbled = FakeHost::default().command(&REG_QUERY_MACHINE_GUID, Some("ERROR\r\n"));
    assert!(matches!(
        resolve(Platform::Windows, &garbled).unwrap_err(),
        IdentityError::Unparseable { .. }
    ));
}

// ---- FreeBSD ----

#[test]
fn freebsd_prefers_the_smbios_uuid() {
    let host = FakeHost::default()
        .command(
            &KENV_SYSTEM_UUID,
            Some("4C4C4544-0042-3510-8052-B4C04F4B4E31\n"),
        )
        .command(
            &SYSCTL_HOST_UUID,
            Some("ffffffff-0000-0000-0000-000000000000\n"),
        );
    let identity = resolve(Platform::FreeBsd, &host).unwrap();
    assert_eq!(
        identity.machine_id,
        sha256_hex("4c4c4544-0042-3510-8052-b4c04f4b4e31")
    );
    assert_eq!(*host.ran.borrow(), vec!["/bin/kenv"]);
}

#[test]
fn freebsd_falls_back_to_the_host_uuid_when_kenv_fails_or_is_empty() {
    for kenv in [None, Some("\n")] {
        let host = FakeHost::default()
            .command(&KENV_SYSTEM_UUID, kenv)
            .command(
                &SYSCTL_HOST_UUID,
                Some("11112222-3333-4444-5555-666677778888\n"),
            );
        let identity = resolve(Platform::FreeBsd, &host).unwrap();
        assert_eq!(
            identity.machine_id,
            sha256_hex("11112222-3333-4444-5555-666677778888")
        );
    }
}

#[test]
fn freebsd_without_either_source_is_source_missing() {
    let host = FakeHost::default().command(&KENV_SYSTEM_UUID, None);
    let error = resolve(Platform::FreeBsd, &host).unwrap_err();
    assert!(
        matches!(&error, IdentityError::SourceMissing { platform: Platform::FreeBsd, tried } if tried.contains("kenv") && tried.contains("sysctl")),
        "{error:?}"
    );
}
