//! Links the Node addon when the `node` feature is on; does nothing otherwise.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    #[cfg(feature = "node")]
    if std::env::var_os("CARGO_FEATURE_NODE").is_some() {
        napi_build::setup();
    }
}
