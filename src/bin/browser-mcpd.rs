use browser_mcp::daemon::{self, Config};
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let config = Config::parse();
    let mut builder = match config.threads {
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
    match runtime.block_on(daemon::run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("browser-mcpd: {e}");
            ExitCode::FAILURE
        }
    }
}
