use browser_mcp::daemon::{self, Activation, Exit, LoadError, Start, EXIT_CONFIG};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let argv: Vec<_> = std::env::args_os().collect();
    let loaded = match daemon::load(&argv) {
        Ok(l) => l,
        Err(LoadError::Usage(e)) => e.exit(),
        Err(e) => {
            eprintln!("browser-mcpd: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if loaded.config.print_config {
        print!("{}", loaded.render());
        return ExitCode::SUCCESS;
    }
    // Safety: no other thread exists yet (the runtime starts below).
    let activation = match unsafe { Activation::take() } {
        Ok(a) => a,
        Err(e) => {
            eprintln!("browser-mcpd: socket activation: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut builder = match loaded.config.threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        0 => tokio::runtime::Builder::new_multi_thread(),
        n => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("browser-mcpd: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(daemon::run(Start {
        argv,
        loaded,
        activation,
    }));
    // Tasks cut short by a second signal are not waited for.
    runtime.shutdown_timeout(Duration::from_millis(200));
    match result {
        Ok(Exit::Clean) => ExitCode::SUCCESS,
        Ok(Exit::Forced(signal)) => ExitCode::from(128 + signal as u8),
        Err(e) => {
            eprintln!("browser-mcpd: {e}");
            ExitCode::FAILURE
        }
    }
}
