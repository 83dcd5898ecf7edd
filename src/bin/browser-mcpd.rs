use browser_mcp::daemon::{self, Config};
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let config = Config::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
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
