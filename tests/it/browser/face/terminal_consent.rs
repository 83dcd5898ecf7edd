//! A consent prompt answered from a terminal (issue 60), in Chromium (and, shorter, Firefox) on
//! a fresh install: a
//! call waits; `browserctl consent list` shows its prompt; `browserctl consent answer ID
//! allow-once` lets it through as the popup's button would (the call returns the tool's
//! result; the activity log says a terminal answered), `deny` fails it with USER_DENIED; a
//! second answer and an unknown id get their codes; an agent's MCP session and the loopback
//! port with the token have no way to answer.

use super::*;
use crate::mcp::rmcp_client::stdio_with;
use crate::support::harness::{post_request, raw_http};
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::ClientHandler;
use serde_json::json;

#[derive(Clone)]
struct Agent;

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("some-agent", "1.0"),
        )
    }
}

/// The one prompt `browserctl consent list --json` shows, once it shows one for `tool`.
fn waiting_prompt(d: &TestDaemon, tool: &str) -> Value {
    let start = Instant::now();
    loop {
        let list = d.ctl_json(&["consent", "list"]);
        let prompts = list["prompts"].as_array().unwrap();
        if let [p] = prompts.as_slice() {
            if p["tool"] == tool {
                return p.clone();
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no prompt for {tool}: {list}\n{}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_prompt_is_answered_from_the_terminal_and_never_by_an_agent() {
    let test = "browser::face::terminal_consent::a_prompt_is_answered_from_the_terminal_and_never_by_an_agent";
    let Some(face) = ChromiumFace::fresh(test) else {
        return;
    };
    let ChromiumFace {
        mut b, d, pages, ..
    } = face;
    let url = pages.url("recipes");
    let site = pages.origin();
    let tab = wait_for_tab(&d, &b, &url, |n| n.contains(&"browser_snapshot"));
    let tab_ref = tab["ref"].as_str().unwrap().to_owned();

    // Nothing waits yet.
    let out = d.ctl(&["consent", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no consent prompt waits"),
        "{}",
        stderr(&out)
    );

    // A call waits; the list names who asks, where, what, and the answers it takes.
    let call = spawn_ctl(&d, &["call", "browser_snapshot", "--tab", &tab_ref]);
    let p = waiting_prompt(&d, "browser_snapshot");
    assert_eq!(
        (&p["agent"], &p["site"], &p["tab"]),
        (&json!("browserctl"), &json!(site), &json!(tab_ref)),
        "{p}"
    );
    assert_eq!(
        p["choices"],
        json!([
            "allow-once",
            "allow-site",
            "allow-agent",
            "allow-agent-read",
            "allow-site-read",
            "deny"
        ]),
        "a read names every answer: {p}"
    );
    assert!(p["remainingMs"].as_u64().unwrap() > 0, "{p}");
    let id = p["id"].as_str().unwrap().to_owned();
    let table = stdout(&d.ctl(&["consent", "list", "-o", "table"]));
    assert!(
        table.starts_with("ID") && table.contains(&id) && table.contains("browser_snapshot"),
        "{table}"
    );

    // An agent cannot answer it: its MCP session has no such tool, and the loopback port
    // refuses the control API even with the token.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let agent = rt.block_on(stdio_with(&d, &[], Agent));
    let tools = rt.block_on(agent.peer().list_all_tools()).unwrap();
    assert!(
        !tools.iter().any(|t| t.name.contains("consent")),
        "{:?}",
        tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>()
    );
    let tried = rt.block_on(
        agent.peer().call_tool(
            CallToolRequestParams::new("browserctl_consent_answer").with_arguments(
                json!({"id": id, "choice": "allow-once"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        ),
    );
    let refused = match tried {
        Ok(r) => r.is_error == Some(true),
        Err(_) => true,
    };
    assert!(refused, "an MCP session answered a prompt");
    let request = post_request(
        &format!("/v1/consent/{id}"),
        &json!({"choice": "allow-once"}),
    )
    .replace(
        "Host: x\r\n",
        &format!("Host: 127.0.0.1\r\nAuthorization: Bearer {}\r\n", d.token),
    );
    let answer = rt.block_on(raw_http(d.port, &request));
    assert!(
        answer.starts_with("HTTP/1.1 401") || answer.starts_with("HTTP/1.1 403"),
        "{answer}"
    );
    assert!(
        answer.contains("UNAUTHORIZED") && answer.contains("never by an agent"),
        "{answer}"
    );
    assert_eq!(
        waiting_prompt(&d, "browser_snapshot")["id"],
        json!(id),
        "still waiting"
    );
    rt.block_on(agent.cancel()).unwrap();

    // The person answers at the terminal: the call returns the snapshot.
    let out = d.ctl(&["consent", "answer", &id, "allow-once"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("allow-once"), "{}", stdout(&out));
    let done = call.join().unwrap();
    assert!(done.status.success(), "{}", stderr(&done));
    assert!(stdout(&done).contains("Recipe box"), "{}", stdout(&done));
    // Once: a second answer, and an id nobody asked, get their codes.
    fails(
        &d.ctl(&["consent", "answer", &id, "deny"]),
        28,
        "CONSENT_ANSWERED",
    );
    fails(
        &d.ctl(&["consent", "answer", "no-such-prompt", "deny"]),
        27,
        "CONSENT_NOT_FOUND",
    );

    // The next call asks again; deny from the terminal fails it with USER_DENIED.
    let call = spawn_ctl(&d, &search_args(&tab_ref, "leeks"));
    let p = waiting_prompt(&d, "search_recipes");
    assert!(
        !p["choices"]
            .as_array()
            .unwrap()
            .contains(&json!("allow-agent-read")),
        "a page's own tool acts: no read-only answer: {p}"
    );
    fails(
        &d.ctl(&[
            "consent",
            "answer",
            p["id"].as_str().unwrap(),
            "allow-site-read",
        ]),
        6,
        "does not offer",
    );
    let out = d.ctl(&["consent", "answer", p["id"].as_str().unwrap(), "deny"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let done = call.join().unwrap();
    fails(&done, 20, "USER_DENIED");

    // The events and the activity log say who answered.
    let out = d.ctl(&[
        "events",
        "--since",
        "0",
        "--type",
        "consentAnswered",
        "--count",
        "2",
    ]);
    let ends: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let said: Vec<_> = ends
        .iter()
        .map(|e| (e["data"]["outcome"].clone(), e["data"]["by"].clone()))
        .collect();
    assert_eq!(
        said,
        [
            (json!("allowed"), json!("terminal")),
            (json!("denied"), json!("terminal"))
        ],
        "{ends:?}"
    );
    let options = b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/options.html"
    ));
    let log = b.wait_for(
        &options,
        "the activity log",
        "(() => { const rows = [...document.querySelectorAll('#activity tr')].map((tr) => tr.cells[7].textContent); return rows.length >= 2 && rows.slice(0, 2); })()",
    );
    assert_eq!(
        log,
        json!(["denied (from a terminal)", "allowed once (from a terminal)"]),
        "what the person reads"
    );
}

/// The same answers from the terminal reach Firefox's prompt.
#[test]
fn a_prompt_is_answered_from_the_terminal_in_firefox() {
    // Held whole to the end: the browser and the machine-wide lock with it.
    let Some(face) = FirefoxFace::fresh(
        "browser::face::terminal_consent::a_prompt_is_answered_from_the_terminal_in_firefox",
    ) else {
        return;
    };
    let (d, pages) = (&face.d, &face.pages);
    let url = pages.url("recipes");
    let tab = crate::support::chromium::listed_tab(
        d,
        crate::support::firefox::FIREFOX_WAIT,
        &url,
        "search_recipes",
    );
    let tab_ref = tab["ref"].as_str().unwrap().to_owned();
    let call = spawn_ctl(d, &["call", "browser_snapshot", "--tab", &tab_ref]);
    let p = waiting_prompt(d, "browser_snapshot");
    assert_eq!(p["site"], json!(pages.origin()), "{p}");
    let out = d.ctl(&["consent", "answer", p["id"].as_str().unwrap(), "allow-once"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let done = call.join().unwrap();
    assert!(done.status.success(), "{}", stderr(&done));
    assert!(stdout(&done).contains("Recipe box"), "{}", stdout(&done));
    let call = spawn_ctl(d, &search_args(&tab_ref, "leeks"));
    let p = waiting_prompt(d, "search_recipes");
    let out = d.ctl(&["consent", "answer", p["id"].as_str().unwrap(), "deny"]);
    assert!(out.status.success(), "{}", stderr(&out));
    fails(&call.join().unwrap(), 20, "USER_DENIED");
}
