//! The daemon's life: logging, start-up in order, readiness, signals and a clean shutdown.

use super::{control, discovery, extension, Config, Daemon, Runtime};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

/// Why the daemon could not start; printed as `browser-mcpd: <message>`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(pub String);

fn start_error(context: &str, e: impl std::fmt::Display) -> StartError {
    StartError(format!("{context}: {e}"))
}

pub fn init_logging(config: &Config) {
    // RUST_LOG wins over LOG_LEVEL/--log-level when set, as tracing users expect.
    let filter = EnvFilter::try_from_env("RUST_LOG")
        .or_else(|_| EnvFilter::try_new(&config.log_level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

fn random_token() -> String {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs the daemon until SIGTERM or SIGINT.
pub async fn run(config: Config) -> Result<(), StartError> {
    init_logging(&config);
    if !config.bind.is_loopback() {
        return Err(StartError(format!(
            "refusing to bind {}: browser-mcpd only listens on loopback addresses (127.0.0.1, ::1)",
            config.bind
        )));
    }
    discovery::prepare_dir(&config.discovery_dir)
        .map_err(|e| start_error("discovery directory", e))?;
    let socket_path = config.socket_path();
    let control_listener =
        control::bind(&socket_path).map_err(|e| start_error("control socket", e))?;
    let tcp = TcpListener::bind(SocketAddr::new(config.bind, config.port))
        .await
        .map_err(|e| {
            start_error(
                &format!("extension port {}:{}", config.bind, config.port),
                e,
            )
        })?;
    let port = tcp.local_addr().map_err(|e| start_error("port", e))?.port();
    let pid = std::process::id();
    let runtime = Runtime {
        port,
        socket: socket_path.clone(),
        discovery_file: config.discovery_dir.join(format!("server-{pid}.json")),
        started_at: crate::time::now_rfc3339(),
        started: Instant::now(),
        token: random_token(),
    };
    let daemon = Arc::new(Daemon::new(config, runtime));

    daemon
        .tasks
        .spawn(control::serve(control_listener, daemon.clone()));
    daemon.tasks.spawn(extension::serve(tcp, daemon.clone()));

    // Handlers first: a SIGTERM right after the discovery file appears must stop us cleanly.
    let stop = shutdown_signal();
    let disco = discovery::Discovery::new(&daemon);
    discovery::sweep_stale(&daemon.config.discovery_dir, pid);
    disco
        .write()
        .map_err(|e| start_error("discovery file", e))?;
    let watcher = disco.clone().watch(daemon.shutdown.clone());

    tracing::info!(
        port,
        socket = %socket_path.display(),
        discovery = %daemon.runtime.discovery_file.display(),
        "browser-mcpd {} ready",
        env!("CARGO_PKG_VERSION")
    );
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Ready]);

    stop.await;
    tracing::info!("shutting down");
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Stopping]);
    daemon.shutdown.cancel();
    daemon.tasks.close();
    if tokio::time::timeout(Duration::from_secs(5), daemon.tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!("some connections did not close within 5 s");
    }
    let _ = watcher.await;
    disco.remove();
    control::unlink(&socket_path);
    Ok(())
}

/// Installs the SIGTERM/SIGINT handlers now; the future resolves on the first signal.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
}
