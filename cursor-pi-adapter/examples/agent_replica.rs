//! Serves cursor-agent's loopback replica of Cursor's agent backend until killed, printing its
//! origin first (stdout) and one JSON record per finished Run (stderr), so real pi runs of the
//! extension can be tested without the network:
//!
//! ```sh
//! cargo run -p cursor-pi-adapter --example agent_replica &   # prints http://127.0.0.1:PORT
//! CURSOR_PROVIDER_AGENT_ORIGIN=http://127.0.0.1:PORT pi -e examples/pi-extension ...
//! ```

use std::io::Write as _;

use cursor_agent::testing::Replica;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let server = Replica::start().await?;
    server
        .replica()
        .set_record_sink(|record| eprintln!("{}", record.to_json_line()));
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", server.origin())?;
    stdout.flush()?;
    std::future::pending::<()>().await;
    Ok(())
}
