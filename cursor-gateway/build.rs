//! Records the git revision for `--version` (`unknown` outside a checkout, as in a packaged
//! crate built by `cargo install`).

fn main() {
    let rev = std::env::var("CURSOR_GATEWAY_GIT_REV")
        .ok()
        .filter(|r| !r.is_empty());
    let rev = rev
        .or_else(|| {
            std::process::Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .output()
                .ok()
                .filter(|out| out.status.success())
                .and_then(|out| String::from_utf8(out.stdout).ok())
                .map(|rev| rev.trim().to_owned())
                .filter(|rev| !rev.is_empty())
        })
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=CURSOR_GATEWAY_GIT_REV={rev}");
    for path in ["../.git/HEAD", "../.git/refs/heads"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-env-changed=CURSOR_GATEWAY_GIT_REV");
}
