//! Wait for a tool to appear in a browser tab, call it, print the result, then follow events.
//!
//! ```sh
//! cargo run --example wait_and_call -- search '{"query": "test"}'
//! ```
//!
//! Uses only the library's client; the daemon is found like browserctl finds it
//! (`$BROWSER_MCP_SOCKET`, else the default socket path).

use browser_mcp::client::{Client, EventFilter};
use futures_util::StreamExt;
use std::process::ExitCode;
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let tool = args.next().unwrap_or_else(|| "search".to_owned());
    let json_args = args.next().unwrap_or_else(|| "{}".to_owned());
    match run(&tool, &json_args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wait_and_call: {}: {}", e.code, e.message);
            ExitCode::from(e.code.exit_code())
        }
    }
}

async fn run(tool: &str, json_args: &str) -> Result<(), browser_mcp::Error> {
    let client = Client::from_env();
    let args: serde_json::Value = serde_json::from_str(json_args).map_err(|e| {
        browser_mcp::Error::new(browser_mcp::ErrorCode::InvalidArguments, e.to_string())
    })?;

    let offered = client
        .wait_for_tool(tool, None, Duration::from_secs(30))
        .await?;
    println!("`{tool}` is offered by {}", offered[0].tab);

    let answer = client.call(tool, args).await?;
    println!(
        "{} answered in {} ms: {}",
        answer.tab,
        answer.elapsed_ms,
        answer.result.get()
    );

    println!("following tab events (Ctrl-C to stop)…");
    let filter = EventFilter {
        types: vec![
            "tabCreated".into(),
            "tabClosed".into(),
            "toolsChanged".into(),
        ],
        ..Default::default()
    };
    let mut events = client.events(&filter).await?;
    while let Some(event) = events.next().await {
        let event = event?;
        println!(
            "#{} {} {}",
            event.seq,
            event.kind,
            event.tab.unwrap_or_default()
        );
    }
    Ok(())
}
