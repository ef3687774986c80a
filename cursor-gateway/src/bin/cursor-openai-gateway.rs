//! `cursor-openai-gateway`: the gateway's former name, kept for one release. It runs
//! `cursor-gateway` and warns that the name is going away.

fn main() -> std::process::ExitCode {
    eprintln!(
        "cursor-openai-gateway: this name is deprecated and goes away in the next release; \
         run cursor-gateway instead"
    );
    cursor_gateway::cli_main("cursor-openai-gateway")
}
