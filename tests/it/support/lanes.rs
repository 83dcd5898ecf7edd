//! Issue 60's lanes workload, run by the CI test (`browser::lanes`) and by the bench's lanes
//! row (`benches/bridge/lanes.rs`, which includes this file by its path: it uses tokio and
//! serde_json alone). Several MCP clients (`browserctl mcp`, each with a name of its own) work
//! one browser at once, each in tabs it opened, each tab in turn made its current tab and then
//! driven without naming it: navigate, snapshot, click, type, snapshot. A further client, the
//! intruder, reads the others' tabs and tries to act in them. Counted: cross-talk (a page
//! showing another agent's doing, an answer from a tab that was not asked, an intruder's
//! action let through), lost calls (an error nobody expected), hung calls (no answer within
//! [`HUNG`]), the latencies alone and together, and whether the daemon answered and the
//! extension's connection stayed the same throughout.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// A call without an answer for this long is hung.
pub const HUNG: Duration = Duration::from_secs(30);

/// The intruder's pause between its rounds (a read and three refused actions).
const INTRUDER_PAUSE: Duration = Duration::from_millis(200);

/// The page each lane's tabs show: who it is for (`?a=&t=&n=`), a counter its button
/// increments, and a field to type in. Every line an agent checks ends with a period, so
/// `n1.` is never read in `n17.`.
pub const LANE_PAGE: &str = r#"<!doctype html><meta charset="utf-8"><title>Lane</title>
<h1 id="m">lane</h1><p id="c">count 0.</p>
<button id="b">Count</button> <label>Note <input id="i"></label>
<script>
const q = new URLSearchParams(location.search);
document.getElementById('m').textContent = `lane a${q.get('a')} t${q.get('t')} n${q.get('n')}.`;
let n = 0;
document.getElementById('b').onclick = () => { document.getElementById('c').textContent = `count ${++n}.`; };
</script>"#;

/// What to run: `browserctl` and the daemon's socket, where [`LANE_PAGE`] is served (any
/// query string is added), how many agents each with how many tabs, and for how long: first
/// one agent alone, then all of them with the intruder.
pub struct Work {
    pub ctl: PathBuf,
    pub socket: PathBuf,
    pub page: String,
    pub agents: usize,
    pub tabs: usize,
    pub alone: Duration,
    pub together: Duration,
}

#[derive(Debug, Default)]
pub struct Report {
    /// Latencies of the browser calls of agent 0 alone, and of every agent together.
    pub alone: Vec<Duration>,
    pub together: Vec<Duration>,
    /// The latencies together, by tool.
    pub by_tool: std::collections::BTreeMap<String, Vec<Duration>>,
    /// Rounds of the five calls that every agent finished together.
    pub rounds: u64,
    pub cross_talk: Vec<String>,
    pub lost: Vec<String>,
    pub hung: u64,
    /// The intruder's actions refused with TAB_OWNED, and its reads answered.
    pub refused: u64,
    pub reads: u64,
    /// Moments (polled each second) the daemon did not answer, and times the browser's
    /// connection was new.
    pub daemon_down: u64,
    pub reconnects: u64,
}

/// The `q` quantile of some latencies.
pub fn quantile(lat: &[Duration], q: f64) -> Duration {
    let mut v = lat.to_vec();
    v.sort();
    match v.len() {
        0 => Duration::ZERO,
        n => v[((n as f64 * q).ceil() as usize).clamp(1, n) - 1],
    }
}

impl Report {
    /// p99 together over p99 alone.
    pub fn ratio(&self) -> f64 {
        let alone = quantile(&self.alone, 0.99).as_secs_f64();
        quantile(&self.together, 0.99).as_secs_f64() / alone.max(1e-6)
    }

    pub fn summary(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let (a, t) = (&self.alone, &self.together);
        format!(
            "alone: {} calls, p50 {:.1} / p99 {:.1} ms; together: {} calls, {} rounds, p50 {:.1} / \
             p99 {:.1} ms ({:.2}x); cross-talk {}, lost {}, hung {}; intruder refused {}, reads {}; \
             daemon down {}, reconnects {}",
            a.len(),
            ms(quantile(a, 0.5)),
            ms(quantile(a, 0.99)),
            t.len(),
            self.rounds,
            ms(quantile(t, 0.5)),
            ms(quantile(t, 0.99)),
            self.ratio(),
            self.cross_talk.len(),
            self.lost.len(),
            self.hung,
            self.refused,
            self.reads,
            self.daemon_down,
            self.reconnects
        )
    }

    /// p50 / p99 of each tool together, in ms.
    pub fn tools(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let each = self.by_tool.iter().map(|(tool, lat)| {
            let (p50, p99) = (quantile(lat, 0.5), quantile(lat, 0.99));
            format!("{tool} {:.0}/{:.0}", ms(p50), ms(p99))
        });
        each.collect::<Vec<_>>().join(", ")
    }

    fn absorb(&mut self, o: Report) {
        self.together.extend(o.together);
        for (tool, lat) in o.by_tool {
            self.by_tool.entry(tool).or_default().extend(lat);
        }
        self.rounds += o.rounds;
        self.cross_talk.extend(o.cross_talk);
        self.lost.extend(o.lost);
        self.hung += o.hung;
        self.refused += o.refused;
        self.reads += o.reads;
    }
}

/// How one call ended.
#[derive(Debug)]
pub enum Outcome {
    /// Its text and the tab that answered.
    Answered(String, String),
    Failed(String),
    Hung,
}

/// One MCP client: `browserctl mcp` on stdio, spoken to one request at a time.
pub struct Mcp {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next: u64,
    /// The messages of the progress notifications heard so far.
    pub progress: Vec<String>,
}

impl Mcp {
    async fn start(w: &Work, name: &str) -> Mcp {
        Mcp::connect(&w.ctl, &w.socket, name).await
    }

    /// `ctl mcp` on the daemon at `socket`, initialized as the client `name`.
    pub async fn connect(ctl: &std::path::Path, socket: &std::path::Path, name: &str) -> Mcp {
        let mut child = Command::new(ctl)
            .arg("--socket")
            .arg(socket)
            .arg("mcp")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start browserctl mcp");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut m = Mcp {
            _child: child,
            stdin,
            lines,
            next: 0,
            progress: Vec::new(),
        };
        let init = json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": name, "version": "1"}});
        m.request("initialize", init, HUNG)
            .await
            .expect("initialize");
        m.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        m
    }

    async fn send(&mut self, msg: Value) {
        let line = msg.to_string() + "\n";
        self.stdin.write_all(line.as_bytes()).await.expect("write");
    }

    /// A request's `result` (or its JSON-RPC `error`), `None` when none came within `limit`.
    async fn request(&mut self, method: &str, params: Value, limit: Duration) -> Option<Value> {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let answer = async {
            loop {
                let line = self.lines.next_line().await.ok()??;
                let v: Value = serde_json::from_str(&line).ok()?;
                if v["id"] == id {
                    return Some(v);
                }
                if v["method"] == "notifications/progress" {
                    let said = v["params"]["message"].as_str().unwrap_or_default();
                    self.progress.push(said.to_owned());
                }
            }
        };
        let v = tokio::time::timeout(limit, answer).await.ok()??;
        Some(if v.get("error").is_some() {
            json!({"isError": true, "content": [{"type": "text", "text": v["error"].to_string()}]})
        } else {
            v["result"].clone()
        })
    }

    pub async fn call(&mut self, tool: &str, args: Value) -> Outcome {
        self.call_with(json!({"name": tool, "arguments": args}), HUNG)
            .await
    }

    /// A call that asks for progress (heard in `progress`) and may take up to `limit`.
    #[allow(dead_code)] // the bench, which shares this file, asks for no progress
    pub async fn call_hearing_progress(
        &mut self,
        tool: &str,
        args: Value,
        limit: Duration,
    ) -> Outcome {
        let meta = json!({"progressToken": "p1"});
        let params = json!({"name": tool, "arguments": args, "_meta": meta});
        self.call_with(params, limit).await
    }

    async fn call_with(&mut self, params: Value, limit: Duration) -> Outcome {
        let Some(r) = self.request("tools/call", params, limit).await else {
            return Outcome::Hung;
        };
        let text: Vec<&str> = (r["content"].as_array().into_iter().flatten())
            .filter_map(|c| c["text"].as_str())
            .collect();
        let text = text.join("\n");
        if r["isError"] == true {
            return Outcome::Failed(text);
        }
        let tab = r["_meta"]["dev.browsermcp/tab"].as_str().unwrap_or("");
        Outcome::Answered(text, tab.to_owned())
    }
}

/// The ref of the first snapshot line that starts with `[role eN]` and has `name` after it.
pub fn ref_of(snap: &str, role: &str, name: &str) -> Option<String> {
    snap.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix(&format!("[{role} "))?;
        let (r, after) = rest.split_once(']')?;
        after.trim_start().starts_with(name).then(|| r.to_owned())
    })
}

/// One agent's lane: its name, its tabs, what it saw.
struct Lane {
    agent: usize,
    mcp: Mcp,
    tabs: Vec<String>,
    /// Rounds begun: each loads its page afresh, at a URL of its own.
    n: u64,
    report: Report,
}

impl Lane {
    fn url(w: &Work, agent: usize, tab: usize, n: u64) -> String {
        format!("{}?a={agent}&t={tab}&n={n}", w.page)
    }

    async fn start(w: &Work, agent: usize) -> Lane {
        let mut mcp = Mcp::start(w, &format!("lane-agent-{agent}")).await;
        let mut tabs = Vec::new();
        for t in 0..w.tabs {
            let args = json!({"url": Lane::url(w, agent, t, 0)});
            let Outcome::Answered(text, _) = mcp.call("browserctl_open_tab", args).await else {
                panic!("agent {agent} could not open a tab");
            };
            let v: Value = serde_json::from_str(&text).expect("the opened tab");
            tabs.push(v["tab"].as_str().expect("its ref").to_owned());
        }
        // Each tab's page up, with the built-ins listed (not measured).
        for tab in &tabs {
            let start = Instant::now();
            loop {
                let args = json!({"tab": tab});
                if let Outcome::Answered(s, _) = mcp.call("browser_snapshot", args).await {
                    if s.contains("[button") {
                        break;
                    }
                }
                assert!(
                    start.elapsed() < HUNG,
                    "agent {agent}'s tab {tab} never showed its page"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Lane {
            agent,
            mcp,
            tabs,
            n: 0,
            report: Report::default(),
        }
    }

    /// One timed call of the round; its text, or `None` once the round cannot go on.
    async fn timed(&mut self, tool: &str, args: Value, tab: &str, what: &str) -> Option<String> {
        let t0 = Instant::now();
        let outcome = self.mcp.call(tool, args).await;
        let took = t0.elapsed();
        self.report.together.push(took);
        let by_tool = self.report.by_tool.entry(tool.to_owned()).or_default();
        by_tool.push(took);
        let who = format!("agent {} {what} on {tab}", self.agent);
        match outcome {
            Outcome::Answered(text, at) if at == tab => Some(text),
            Outcome::Answered(_, at) => {
                self.report
                    .cross_talk
                    .push(format!("{who}: answered by {at}"));
                None
            }
            Outcome::Failed(e) => {
                self.report.lost.push(format!("{who}: {e}"));
                None
            }
            Outcome::Hung => {
                self.report.hung += 1;
                None
            }
        }
    }

    /// Navigate, snapshot, click, type, snapshot, in the current tab, the next of its own.
    async fn round(&mut self, w: &Work) -> Option<()> {
        self.n += 1;
        let (n, t) = (self.n, self.n as usize % self.tabs.len());
        let tab = self.tabs[t].clone();
        let select = self
            .mcp
            .call("browserctl_select_tab", json!({"tab": tab}))
            .await;
        if !matches!(select, Outcome::Answered(..)) {
            self.report
                .lost
                .push(format!("agent {} selecting {tab}", self.agent));
            return None;
        }
        let url = Lane::url(w, self.agent, t, n);
        self.timed("browser_navigate", json!({"url": url}), &tab, "navigate")
            .await?;
        let marker = format!("lane a{} t{t} n{n}.", self.agent);
        let snap = self
            .timed("browser_snapshot", json!({}), &tab, "snapshot")
            .await?;
        let seen = self.check(&snap, &tab, &marker, "count 0.", None)?;
        let (button, field) = seen;
        self.timed("browser_click", json!({"ref": button}), &tab, "click")
            .await?;
        let text = format!("a{}t{t}n{n}", self.agent);
        let args = json!({"ref": field, "text": text});
        self.timed("browser_type", args, &tab, "type").await?;
        let snap = self
            .timed("browser_snapshot", json!({}), &tab, "snapshot")
            .await?;
        self.check(&snap, &tab, &marker, "count 1.", Some(&text))?;
        self.report.rounds += 1;
        Some(())
    }

    /// What a snapshot must show: this round's page, the count, the typed note; the refs of
    /// the button and the field.
    fn check(
        &mut self,
        snap: &str,
        tab: &str,
        marker: &str,
        count: &str,
        note: Option<&str>,
    ) -> Option<(String, String)> {
        let noted = note.is_none_or(|n| snap.contains(&format!("= \"{n}\"")));
        let ok = snap.contains(marker) && snap.matches("lane a").count() == 1;
        if !(ok && snap.contains(count) && noted) {
            let who = format!("agent {} on {tab}", self.agent);
            let want = format!("{marker} {count} {note:?}");
            self.report
                .cross_talk
                .push(format!("{who}: wanted {want}, saw:\n{snap}"));
            return None;
        }
        Some((
            ref_of(snap, "button", "Count")?,
            ref_of(snap, "textbox", "Note")?,
        ))
    }

    /// Rounds until `until`; the lane is given back, its session still open, so that its tabs
    /// stay its own until every other client is done with them too.
    async fn run(mut self, w: &Work, until: Instant) -> Lane {
        while Instant::now() < until {
            self.round(w).await;
        }
        self
    }
}

/// The intruder: reads the others' tabs (answered), tries to act in them (refused).
async fn intrude(w: &Work, victims: Vec<String>, until: Instant) -> Report {
    let mut mcp = Mcp::start(w, "lane-intruder").await;
    let mut r = Report::default();
    let mut i = 0;
    while Instant::now() < until {
        let tab = &victims[i % victims.len()];
        i += 1;
        // The refs a page of the lanes has: what the intruder would click and type in.
        let (mut button, mut field) = ("e1".to_owned(), "e2".to_owned());
        match mcp.call("browser_snapshot", json!({"tab": tab})).await {
            Outcome::Answered(s, at) if at == *tab && s.contains("lane a") => {
                r.reads += 1;
                button = ref_of(&s, "button", "Count").unwrap_or(button);
                field = ref_of(&s, "textbox", "Note").unwrap_or(field);
            }
            Outcome::Hung => r.hung += 1,
            _ => r.lost.push(format!("the intruder's read of {tab}")),
        }
        let url = format!("{}?a=intruder", w.page);
        for (tool, args) in [
            ("browser_click", json!({"tab": tab, "ref": button})),
            (
                "browser_type",
                json!({"tab": tab, "ref": field, "text": "INTRUDER"}),
            ),
            ("browser_navigate", json!({"tab": tab, "url": url})),
        ] {
            match mcp.call(tool, args).await {
                Outcome::Failed(e) if e.starts_with("TAB_OWNED: ") => r.refused += 1,
                Outcome::Failed(e) => r.lost.push(format!("the intruder's {tool} on {tab}: {e}")),
                Outcome::Hung => r.hung += 1,
                Outcome::Answered(..) => r
                    .cross_talk
                    .push(format!("the intruder's {tool} landed in {tab}")),
            }
        }
        // An agent that looks in now and then, not a load of its own.
        tokio::time::sleep(INTRUDER_PAUSE).await;
    }
    r
}

/// `browserctl --json ARGS` against the workload's daemon, parsed; `None` when it failed.
async fn ctl(w: &Work, args: &[&str]) -> Option<Value> {
    let out = Command::new(&w.ctl)
        .arg("--socket")
        .arg(&w.socket)
        .arg("--json")
        .args(args)
        .output()
        .await
        .ok()?;
    out.status.success().then_some(())?;
    serde_json::from_slice(&out.stdout).ok()
}

/// Each second until `until`: whether the daemon answers, and whether its browser's
/// connection is still the one it was (a new `connectedAt`: the extension's worker restarted).
async fn watch(w: &Work, until: Instant) -> (u64, u64) {
    let connected = |v: &Value| v["browsers"][0]["connectedAt"].clone();
    let first = ctl(w, &["browsers"]).await.map(|v| connected(&v));
    let (mut down, mut reconnects, mut last) = (0, 0, first);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let status = ctl(w, &["status"]).await;
        let now = ctl(w, &["browsers"]).await.map(|v| connected(&v));
        if status.is_none() || now.is_none() {
            down += 1;
            continue;
        }
        if now != last {
            reconnects += 1;
            last = now;
        }
    }
    (down, reconnects)
}

/// Runs the workload; see the module's notes.
pub async fn run(w: &Work) -> Report {
    let mut lanes = Vec::new();
    for agent in 0..w.agents {
        lanes.push(Lane::start(w, agent).await);
    }
    // One agent alone first, in the same run.
    let mut first = lanes.remove(0);
    let until = Instant::now() + w.alone;
    while Instant::now() < until {
        first.round(w).await;
    }
    let mut report = Report {
        alone: std::mem::take(&mut first.report.together),
        ..Report::default()
    };
    first.report.by_tool.clear();
    report.absorb(std::mem::take(&mut first.report));
    report.rounds = 0;
    lanes.insert(0, first);

    let victims: Vec<String> = lanes.iter().flat_map(|l| l.tabs.clone()).collect();
    let until = Instant::now() + w.together;
    let runs: Vec<_> = lanes.into_iter().map(|l| l.run(w, until)).collect();
    let (lanes, intruder, (down, reconnects)) = tokio::join!(
        futures_util::future::join_all(runs),
        intrude(w, victims, until),
        watch(w, until)
    );
    for mut lane in lanes {
        report.absorb(std::mem::take(&mut lane.report));
    }
    report.absorb(intruder);
    report.daemon_down = down;
    report.reconnects = reconnects;
    report
}
