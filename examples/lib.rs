//! Runnable examples for the cursor crate family; run them with `cargo run --example <name>`.
