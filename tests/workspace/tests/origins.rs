//! NFR-4: every network origin written in source is on the allowlist.

use workspace_checks::{host_is_allowed, hosts_named, workspace_sources};

#[test]
fn source_names_only_allowlisted_hosts() {
    let mut offenders = Vec::new();
    for (relative, path) in workspace_sources() {
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, host) in hosts_named(&text) {
            if !host_is_allowed(&host) {
                offenders.push(format!("{relative}:{line}: {host}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "hosts outside the allowlist:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn host_extraction_handles_ports_paths_and_ipv6() {
    // The forbidden URL is assembled at run time so this file itself names no forbidden host.
    let text = format!(
        r#"let a = "https://api2.cursor.sh/auth/poll"; let b = "http://127.0.0.1:8080/x";
let c = "http://[::1]:9/"; let d = "{scheme}://evil-mirror.net";"#,
        scheme = "https"
    );
    let hosts: Vec<String> = hosts_named(&text).into_iter().map(|(_, h)| h).collect();
    assert_eq!(
        hosts,
        ["api2.cursor.sh", "127.0.0.1", "[::1]", "evil-mirror.net"]
    );
    assert!(host_is_allowed("agentn.us.api5.cursor.sh"));
    assert!(!host_is_allowed("evil-mirror.net"));
    assert!(!host_is_allowed("cursor.sh.evil.net"));
    assert!(host_is_allowed("x.example") && host_is_allowed("example.org"));
    assert!(!host_is_allowed("x") && !host_is_allowed("example.org.evil.net"));
    assert!(host_is_allowed("x.example.com") && !host_is_allowed("notexample.com"));
}
