//! The program: options, logging, credentials, the catalog, then serving until SIGTERM or
//! Ctrl-C.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cursor_agent::session::{Client, Origin, TokenSource as _};
use cursor_catalog::{CatalogStore, RefreshOptions, TransportCatalogRpc};
use cursor_transport::{AccessToken, CliIdentity};

use crate::{
    CredentialSource, Gateway, GatewayConfig, GatewayError, GatewayTokens, LogFormat, Options,
    USAGE, VERSION,
};

/// How long start-up waits for the model catalog before using the cached or shipped one.
const CATALOG_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the gateway program named `name` with the process's arguments and environment.
pub fn cli_main(name: &str) -> std::process::ExitCode {
    let env = |name: &str| std::env::var(name).ok();
    let read = |path: &str| std::fs::read_to_string(path);
    let options = match Options::parse(std::env::args().skip(1), env, read) {
        Ok(options) => options,
        Err(GatewayError::Usage(message)) => {
            if !message.is_empty() {
                eprintln!("{name}: {message}");
            }
            eprintln!("{USAGE}");
            return std::process::ExitCode::from(2);
        }
        Err(error) => {
            eprintln!("{name}: [{}] {error}", error.kind());
            return std::process::ExitCode::from(2);
        }
    };
    if options.version {
        println!("cursor-gateway {VERSION}");
        return std::process::ExitCode::SUCCESS;
    }
    init_logging(options.log_format);
    for warning in &options.warnings {
        tracing::warn!("{warning}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "no async runtime");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(options)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(class = %error.kind(), "{error}");
            std::process::ExitCode::from(2)
        }
    }
}

/// Human lines on stderr by default, or one JSON object a line; `RUST_LOG` filters
/// (default `info`).
fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal as _;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Human => builder.with_target(false).try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
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

/// Completes on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

async fn run(options: Options) -> Result<(), GatewayError> {
    let env = |name: &str| std::env::var(name).ok();
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
        Some(options.state.clone()),
    ));
    if *tokens.source() == CredentialSource::None {
        tracing::warn!(
            "no Cursor credentials (CURSOR_API_KEY, CURSOR_ACCESS_TOKEN or pi's auth.json); \
             every request will answer 401"
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
            Err(_) => tracing::warn!("the catalog did not answer in time; using the cached one"),
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
    let config = GatewayConfig::new(
        client,
        agent_origin,
        tokens,
        options.state.clone(),
        store.catalog().clone(),
        cursor_agent::file_uri::from_path(&workspace),
    )
    .with_keys(options.keys.clone())
    .with_limits(options.limits)
    .with_model_aliases(options.model_aliases.clone());
    let gateway = Gateway::new(config);
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(io(format!("listening on {}", options.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(io("reading the bound address".into()))?;
    tracing::info!(
        %addr,
        version = VERSION,
        keys = options.keys.len(),
        state = %options.state.display(),
        "listening"
    );
    println!("LISTENING http://{addr}");
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    gateway
        .serve_until(listener, shutdown_signal())
        .await
        .map_err(io("accepting connections".into()))?;
    tracing::info!("stopped");
    Ok(())
}
