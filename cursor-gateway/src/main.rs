//! `cursor-gateway`: serves the OpenAI API on Cursor's agent; prints `LISTENING http://` and
//! the address once it accepts connections. Its working directory is the workspace native
//! paths resolve in. `--help` lists the options.

fn main() -> std::process::ExitCode {
    cursor_gateway::cli_main("cursor-gateway")
}
