//! The corpus's tasks (tests/e2e/pages/frameworks/tasks.json, shared by every runner) and how an
//! agent does one: a snapshot, the target found by role and name in its text alone, the act,
//! then the library's own state read in the page until the task's check holds.

use super::snapshots::{at_colour, find_ref, Format};
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

#[derive(Deserialize)]
pub(super) struct Corpus {
    pub(super) classes: std::collections::BTreeMap<String, String>,
    pub(super) tasks: Vec<Task>,
}

#[derive(Deserialize, Clone)]
pub(super) struct Task {
    pub(super) id: String,
    pub(super) class: u8,
    /// Under tests/e2e/pages/frameworks/.
    pub(super) page: String,
    pub(super) does: String,
    pub(super) steps: Vec<Step>,
    /// JavaScript on the page, through the library's own state; must become true.
    pub(super) check: String,
}

/// What a snapshot shows of an element: its role and accessible name.
#[derive(Deserialize, Clone)]
pub(super) struct Target {
    pub(super) role: String,
    pub(super) name: String,
}

#[derive(Deserialize, Clone)]
#[serde(tag = "act", rename_all = "snake_case")]
pub(super) enum Step {
    Click {
        #[serde(flatten)]
        on: Target,
    },
    Type {
        #[serde(flatten)]
        on: Target,
        text: String,
        #[serde(default)]
        slowly: bool,
    },
    /// On whatever has the focus, as both tool sets press keys.
    PressKey {
        key: String,
    },
    Select {
        #[serde(flatten)]
        on: Target,
        value: String,
    },
    Hover {
        #[serde(flatten)]
        on: Target,
    },
    Drag {
        #[serde(flatten)]
        on: Target,
        to: Target,
    },
    /// A screenshot, then a click at the centre of the pixels of `colour` (`#rrggbb`), in the
    /// page's CSS pixels.
    ClickAt {
        colour: String,
    },
    HoverAt {
        colour: String,
    },
    /// A screenshot, then a drag across the pixels of `colour`: from `width` CSS pixels left
    /// of their centre to as far right of it (a signature on a pad).
    DragAt {
        colour: String,
        width: f64,
    },
}

pub(super) fn corpus() -> Corpus {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/pages/frameworks/tasks.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// What a tool call gave the agent: its text, and the images it carried (PNG or JPEG bytes).
pub(super) struct Reply {
    pub(super) text: String,
    pub(super) images: Vec<Vec<u8>>,
}

/// One way of driving a browser as an agent does: tool calls, and the page's own state read
/// beside them (never through the agent's tools' answers).
pub(super) trait Agent {
    fn format(&self) -> Format;
    /// A tool call; an error as the agent would see it (code and message).
    fn call(&mut self, tool: &str, args: Value) -> Result<Reply, String>;
    /// The page's own state: `expr` evaluated in the page.
    fn eval(&mut self, expr: &str) -> Value;
    /// The page at `path` under the site's frameworks/ directory.
    fn url(&self, page: &str) -> String;
}

/// How long a target may take to show in the snapshot (a menu opening), and the state to
/// follow an act.
const APPEAR: Duration = Duration::from_secs(2);
const SETTLE: Duration = Duration::from_secs(2);
const LOAD: Duration = Duration::from_secs(20);

/// Does `task`; Err says where it went wrong, as the agent saw it.
pub(super) fn run(agent: &mut dyn Agent, task: &Task) -> Result<(), String> {
    let url = agent.url(&task.page);
    let tool = tool_names(agent.format());
    agent
        .call(tool.navigate, json!({ "url": url }))
        .map_err(|e| format!("navigate: {e}"))?;
    if !until(agent, "window.ready === true", LOAD) {
        return Err("the page's libraries did not start".into());
    }
    let mut last = String::new();
    for step in &task.steps {
        last = act(agent, step).map_err(|e| format!("{}: {e}", describe(step)))?;
    }
    if until(agent, &task.check, SETTLE) {
        Ok(())
    } else {
        Err(format!(
            "state unchanged: `{}` still false {}s after {} answered {:?}",
            task.check,
            SETTLE.as_secs(),
            describe(task.steps.last().unwrap()),
            first_line(&last)
        ))
    }
}

/// Whether `expr` becomes truthy in the page within `limit`.
fn until(agent: &mut dyn Agent, expr: &str, limit: Duration) -> bool {
    let guarded =
        format!("(() => {{ try {{ return !!({expr}); }} catch (e) {{ return false; }} }})()");
    let start = Instant::now();
    loop {
        if agent.eval(&guarded) == Value::Bool(true) {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    line.chars().take(120).collect()
}

pub(super) fn describe(step: &Step) -> String {
    let t = |t: &Target| format!("{} {:?}", t.role, t.name);
    match step {
        Step::Click { on } => format!("click {}", t(on)),
        Step::Type { on, .. } => format!("type into {}", t(on)),
        Step::PressKey { key } => format!("press {key}"),
        Step::Select { on, .. } => format!("select in {}", t(on)),
        Step::Hover { on } => format!("hover {}", t(on)),
        Step::Drag { on, to } => format!("drag {} to {}", t(on), t(to)),
        Step::ClickAt { colour } => format!("click at the {colour} pixels"),
        Step::HoverAt { colour } => format!("hover at the {colour} pixels"),
        Step::DragAt { colour, .. } => format!("drag across the {colour} pixels"),
    }
}

/// The tools each side names differently.
struct Tools {
    navigate: &'static str,
    snapshot: &'static str,
    select: &'static str,
    screenshot: &'static str,
    click_at: &'static str,
    hover_at: &'static str,
    drag_at: &'static str,
}

fn tool_names(format: Format) -> Tools {
    match format {
        Format::Playwright => Tools {
            navigate: "browser_navigate",
            snapshot: "browser_snapshot",
            select: "browser_select_option",
            screenshot: "browser_take_screenshot",
            click_at: "browser_mouse_click_xy",
            hover_at: "browser_mouse_move_xy",
            drag_at: "browser_mouse_drag_xy",
        },
        // Ours takes `x`, `y` on click and hover (issue 57).
        Format::Ours => Tools {
            navigate: "browser_navigate",
            snapshot: "browser_snapshot",
            select: "browser_select",
            screenshot: "browser_screenshot",
            click_at: "browser_click",
            hover_at: "browser_hover",
            drag_at: "browser_drag",
        },
    }
}

/// A fresh snapshot until `target` shows in it with a ref; the ref.
fn locate(agent: &mut dyn Agent, target: &Target) -> Result<String, String> {
    let format = agent.format();
    let start = Instant::now();
    loop {
        let snap = agent.call(tool_names(format).snapshot, json!({}))?;
        if std::env::var_os("FRAMEWORK_VERBOSE").is_some() {
            eprintln!(
                "--- snapshot, looking for {} {:?}\n{}",
                target.role, target.name, snap.text
            );
        }
        if let Some(r) = find_ref(format, &snap.text, &target.role, &target.name) {
            return Ok(r);
        }
        if start.elapsed() > APPEAR {
            return Err(format!(
                "no {} {:?} with a ref in the snapshot{}",
                target.role,
                target.name,
                near(&snap.text, &target.name)
            ));
        }
        std::thread::sleep(Duration::from_millis(150));
    }
}

/// The snapshot's line that holds `name`, if any, to say what the agent saw instead.
fn near(snapshot: &str, name: &str) -> String {
    match snapshot.lines().find(|l| l.contains(name)) {
        Some(l) => format!(" (the text shows it as {:?})", l.trim()),
        None => " (nor its text)".into(),
    }
}

/// One step; the answer's text.
fn act(agent: &mut dyn Agent, step: &Step) -> Result<String, String> {
    let format = agent.format();
    let tools = tool_names(format);
    // Playwright MCP takes the ref as `target`, with the element's description beside it.
    let with = |target: &Target, r: &str, mut args: Value| {
        if format == Format::Playwright {
            args["target"] = json!(r);
            args["element"] = json!(format!("{} {}", target.role, target.name));
        } else {
            args["ref"] = json!(r);
        }
        args
    };
    let reply = match step {
        Step::Click { on } => {
            let r = locate(agent, on)?;
            agent.call("browser_click", with(on, &r, json!({})))?
        }
        Step::Type { on, text, slowly } => {
            let r = locate(agent, on)?;
            let mut args = with(on, &r, json!({ "text": text }));
            if *slowly {
                args["slowly"] = json!(true);
            }
            agent.call("browser_type", args)?
        }
        Step::PressKey { key } => agent.call("browser_press_key", json!({ "key": key }))?,
        Step::Select { on, value } => {
            let r = locate(agent, on)?;
            let args = match format {
                Format::Playwright => with(on, &r, json!({ "values": [value] })),
                Format::Ours => with(on, &r, json!({ "value": value })),
            };
            agent.call(tools.select, args)?
        }
        Step::Hover { on } => {
            let r = locate(agent, on)?;
            agent.call("browser_hover", with(on, &r, json!({})))?
        }
        Step::Drag { on, to } => {
            let from = locate(agent, on)?;
            let into = locate(agent, to)?;
            let args = match format {
                Format::Playwright => json!({
                    "startTarget": from, "startElement": format!("{} {}", on.role, on.name),
                    "endTarget": into, "endElement": format!("{} {}", to.role, to.name),
                }),
                Format::Ours => json!({ "startRef": from, "endRef": into }),
            };
            agent.call("browser_drag", args)?
        }
        Step::DragAt { colour, width } => {
            let (x, y) = seen_at(agent, colour)?;
            let (from, to) = ((x - width).round(), (x + width).round());
            agent.call(
                tools.drag_at,
                json!({ "startX": from, "startY": y, "endX": to, "endY": y }),
            )?
        }
        Step::ClickAt { colour } | Step::HoverAt { colour } => {
            let (x, y) = seen_at(agent, colour)?;
            let tool = if matches!(step, Step::ClickAt { .. }) {
                tools.click_at
            } else {
                tools.hover_at
            };
            agent.call(tool, json!({ "x": x, "y": y }))?
        }
    };
    Ok(reply.text)
}

/// A screenshot, and the centre of the pixels of `colour` on it, in CSS pixels of the viewport.
fn seen_at(agent: &mut dyn Agent, colour: &str) -> Result<(f64, f64), String> {
    let shot = agent.call(tool_names(agent.format()).screenshot, json!({}))?;
    let png = shot.images.first().ok_or("the screenshot has no image")?;
    let scale = scale_of(&shot.text);
    let (x, y) = at_colour(png, colour)?;
    if std::env::var_os("FRAMEWORK_VERBOSE").is_some() {
        eprintln!(
            "--- screenshot ({scale}x): {colour} at ({x:.0}, {y:.0})\n{}",
            shot.text
        );
    }
    Ok(((x / scale).round(), (y / scale).round()))
}

/// Image pixels per CSS pixel, as the screenshot's text says it (`scale 2`, `2x`); 1 when it
/// says nothing, as both tool sets' screenshots are in CSS pixels by default.
fn scale_of(text: &str) -> f64 {
    let lower = text.to_lowercase();
    for (i, _) in lower.match_indices("scale") {
        let rest = lower[i + 5..].trim_start_matches([' ', ':', '=']);
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        if let Ok(s) = number.parse::<f64>() {
            if s > 0.0 {
                return s;
            }
        }
    }
    1.0
}

#[cfg(test)]
mod scale {
    #[test]
    fn read_from_the_text() {
        assert_eq!(super::scale_of("Took a screenshot"), 1.0);
        assert_eq!(super::scale_of("800×600 at scale 2"), 2.0);
    }
}
