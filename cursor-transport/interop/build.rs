//! Generates the connectrpc service from `proto/` without protoc: protox compiles the
//! schema to a descriptor set, connectrpc-build reads it.

use prost::Message as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptors = protox::compile(["interop/v1/echo.proto"], ["proto"])?;
    let descriptor_path = out_dir.join("interop.fds");
    std::fs::write(&descriptor_path, descriptors.encode_to_vec())?;
    connectrpc_build::Config::new()
        .descriptor_set(&descriptor_path)
        .files(&["interop/v1/echo.proto"])
        .include_file("_connectrpc.rs")
        .compile()?;
    Ok(())
}
