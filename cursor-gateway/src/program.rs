//! The program: options, logging, credentials, the catalog, then serving until SIGTERM or
//! Ctrl-C (or printing the configuration, or sweeping expired state).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cursor_agent::session::{Client, Origin, TokenSource as _};
use cursor_catalog::{CatalogStore, RefreshOptions, TransportCatalogRpc};
use cursor_transport::{AccessToken, CliIdentity};

use crate::cli::{Command, Process};
use crate::state::files::{Durability, private_dir, replace_private};
use crate::{
    CredentialSource, Gateway, GatewayConfig, GatewayError, GatewayTokens, LogFormat, Options,
    VERSION,
};

/// How long start-up waits for the model catalog before using the cached or shipped one.
const CATALOG_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the gateway program named `name` with the process's arguments and environment.
pub fn cli_main(name: &str) -> std::process::ExitCode {
    let (command, options) = match Options::parse(std::env::args_os(), &Process) {
        Ok(parsed) => parsed,
        Err(GatewayError::Help(text)) => {
            print!("{text}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(GatewayError::Usage(message)) => {
            eprint!("{message}");
            if !message.ends_with('\n') {
                eprintln!();
            }
            return std::process::ExitCode::from(2);
        }
        Err(error) => {
            eprintln!("{name}: [{}] {error}", error.kind());
            return std::process::ExitCode::from(2);
        }
    };
    if command == Command::Config {
        print!("{}", options.describe());
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
    let ran = match command {
        Command::Sweep => runtime.block_on(sweep(options)),
        _ => runtime.block_on(run(options)),
    };
    match ran {
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

fn io_error(what: String) -> impl FnOnce(std::io::Error) -> GatewayError {
    move |source| GatewayError::Io { what, source }
}

/// The gateway of `options`, with its catalog (the snapshot under `--state`, refreshed now when
/// `refresh_catalog` and credentials allow).
async fn gateway(options: &Options, refresh_catalog: bool) -> Result<Gateway, GatewayError> {
    let env = |name: &str| std::env::var(name).ok();
    private_dir(&options.state).map_err(io_error(format!(
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
    let snapshot_path = options.state.join("catalog.json");
    let persisted = std::fs::read_to_string(&snapshot_path).ok();
    let (mut store, _warnings) = CatalogStore::restore(persisted.as_deref());
    let token = if refresh_catalog {
        tokens.access_token().await.ok()
    } else {
        None
    };
    if let Some(token) = token {
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
                if let Ok(json) = store.snapshot().to_json()
                    && let Err(error) =
                        replace_private(&snapshot_path, json.as_bytes(), Durability::Atomic)
                {
                    tracing::warn!(%error, "the catalog snapshot was not saved");
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
    .with_admin_keys(options.admin_keys.clone())
    .with_limits(options.limits)
    .with_model_aliases(options.model_aliases.clone());
    Ok(Gateway::new(config))
}

async fn run(options: Options) -> Result<(), GatewayError> {
    let gateway = gateway(&options, true).await?;
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(io_error(format!("listening on {}", options.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(io_error("reading the bound address".into()))?;
    let admin = match options.admin_listen {
        Some(admin) => {
            let listener = tokio::net::TcpListener::bind(admin)
                .await
                .map_err(io_error(format!("listening on {admin} (--admin-listen)")))?;
            let bound = listener
                .local_addr()
                .map_err(io_error("reading the bound admin address".into()))?;
            println!("ADMIN http://{bound}");
            Some(listener)
        }
        None => None,
    };
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
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let admin_task = admin.map(|listener| {
        let mut stopped = stopped.clone();
        tokio::spawn(gateway.clone().serve_admin_until(listener, async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        }))
    });
    let served = gateway
        .serve_until(listener, shutdown_signal())
        .await
        .map_err(io_error("accepting connections".into()));
    let _ = stop.send(true);
    if let Some(task) = admin_task {
        let _ = task.await;
    }
    served?;
    tracing::info!("stopped");
    Ok(())
}

async fn sweep(options: Options) -> Result<(), GatewayError> {
    let gateway = gateway(&options, false).await?;
    let report = tokio::task::spawn_blocking(move || gateway.sweep(SystemTime::now()))
        .await
        .map_err(|e| GatewayError::Io {
            what: "sweeping the state directory".into(),
            source: std::io::Error::other(e.to_string()),
        })?;
    println!(
        "swept: {} conversations forgotten, {} kept in use, {} stored responses expired, {} over the size cap, {} leftover files",
        report.conversations,
        report.kept_in_use,
        report.responses_expired,
        report.responses_over_cap,
        report.debris
    );
    Ok(())
}
