use browser_mcp::ctl;
use std::process::ExitCode;

fn main() -> ExitCode {
    // A shell asking for completions (see `browserctl completions`) is answered and exits.
    ctl::completions::complete_from_env(ctl::command);
    let argv: Vec<_> = std::env::args_os().collect();
    let invocation = match ctl::parse(&argv) {
        Ok(i) => i,
        Err(e) => return e.report(&argv),
    };
    if let Some(code) = invocation.run_without_runtime() {
        return code;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("browserctl: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(ctl::run(invocation))
}
