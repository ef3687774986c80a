//! `cursor-openai-gateway [--listen ADDR] [--state DIR] [--api-key KEY] [--agent-origin URL]
//! [--api-origin URL]`: serves the OpenAI API on Cursor's agent; prints
//! `LISTENING http://` and the address once it accepts connections. Its working directory is
//! the workspace native paths resolve in.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cursor_agent::session::{Client, Origin, TokenSource as _};
use cursor_catalog::{CatalogStore, RefreshOptions, TransportCatalogRpc};
use cursor_openai_gateway::{
    CredentialSource, Gateway, GatewayConfig, GatewayError, GatewayTokens, Options, USAGE,
};
use cursor_transport::{AccessToken, CliIdentity};

/// How long start-up waits for the model catalog before using the cached or shipped one.
const CATALOG_TIMEOUT: Duration = Duration::from_secs(10);

fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cursor-openai-gateway: no async runtime: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(GatewayError::Usage(message)) => {
            if !message.is_empty() {
                eprintln!("cursor-openai-gateway: {message}");
            }
            eprintln!("{USAGE}");
            std::process::ExitCode::from(2)
        }
        Err(error) => {
            eprintln!("cursor-openai-gateway: [{}] {error}", error.kind());
            std::process::ExitCode::from(2)
        }
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn origin(
    flag: &'static str,
    value: Option<&str>,
    default: Origin,
) -> Result<Origin, GatewayError> {
    match value {
        None => Ok(default),
        Some(value) => Origin::parse_override(value).map_err(|e| GatewayError::Origin {
            flag,
            message: e.to_string(),
        }),
    }
}

async fn run() -> Result<(), GatewayError> {
    let options = Options::parse(std::env::args().skip(1), env)?;
    let io = |what: String| move |source| GatewayError::Io { what, source };
    std::fs::create_dir_all(&options.state).map_err(io(format!(
        "creating the state directory {}",
        options.state.display()
    )))?;
    let client = Client::new().map_err(|e| GatewayError::Origin {
        flag: "client",
        message: e.to_string(),
    })?;
    let api_origin = origin(
        "--api-origin",
        options.api_origin.as_deref(),
        Origin::api2(),
    )?;
    let tokens = Arc::new(GatewayTokens::from_environment(
        client.clone(),
        api_origin.clone(),
        env,
    ));
    if *tokens.source() == CredentialSource::None {
        eprintln!(
            "cursor-openai-gateway: no Cursor credentials (CURSOR_API_KEY, CURSOR_ACCESS_TOKEN or \
             pi's auth.json); every request will answer 401"
        );
    }

    // The catalog: the snapshot under --state, refreshed now when credentials allow.
    let snapshot_path = options.state.join("catalog.json");
    let persisted = std::fs::read_to_string(&snapshot_path).ok();
    let (mut store, _warnings) = CatalogStore::restore(persisted.as_deref());
    if let Ok(token) = tokens.access_token().await {
        let rpc = TransportCatalogRpc::new(
            client.clone(),
            api_origin.clone(),
            AccessToken::new(token),
            CliIdentity::default(),
        );
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        match tokio::time::timeout(
            CATALOG_TIMEOUT,
            store.refresh(&rpc, now_ms, RefreshOptions::new()),
        )
        .await
        {
            Ok(report) if report.should_persist() => {
                if let Ok(json) = store.snapshot().to_json() {
                    let _ = std::fs::write(&snapshot_path, json);
                }
            }
            Ok(_) => {}
            Err(_) => eprintln!(
                "cursor-openai-gateway: the catalog did not answer in time; using the cached one"
            ),
        }
    }
    let agent_origin = store
        .agent_origin(options.agent_origin.as_deref())
        .map_err(|e| GatewayError::Origin {
            flag: "--agent-origin",
            message: e.to_string(),
        })?
        .origin;

    // The workspace Cursor is told about is where the gateway runs: the client's project.
    let workspace = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let gateway = Gateway::new(GatewayConfig {
        client,
        agent_origin,
        tokens,
        state: options.state.clone(),
        api_key: options.api_key.clone(),
        catalog: store.catalog().clone(),
        workspace_uri: cursor_agent::file_uri::from_path(&workspace),
        max_sessions: cursor_openai_gateway::DEFAULT_MAX_SESSIONS,
    });
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(io(format!("listening on {}", options.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(io("reading the bound address".into()))?;
    println!("LISTENING http://{addr}");
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    gateway
        .serve(listener)
        .await
        .map_err(io("accepting connections".into()))
}
