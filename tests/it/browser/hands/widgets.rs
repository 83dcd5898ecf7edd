//! The widgets people use (issue 34): real libraries, vendored under tests/e2e/pages/widgets/
//! (see its README for names, versions and licences), one small page per kind. Each task is
//! done knowing only what the snapshot shows (refs found by the snapshot's text), and checked
//! through the library's own API in the page, never through our tools. Every task runs over
//! the control socket (what `browserctl call` sends), and again over MCP (`browserctl mcp`,
//! stdio): all of them in Chromium, one of each kind of gesture in Firefox.

use super::*;
use crate::mcp::rmcp_client::{params, stdio_with, text as mcp_text};
// Roots are deprecated in the protocol drafts; today's clients still declare them (src/mcp/roots.rs).
#[allow(deprecated)]
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ListRootsResult, Root};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ErrorData};
use serde_json::json;
use std::sync::{Arc, Mutex};

/// An MCP client whose workspace roots are whatever the task at hand uploads from, as an
/// agent's workspace is: the daemon reads uploads only inside them (issue 31).
#[derive(Clone, Default)]
struct Roots(Arc<Mutex<Vec<String>>>);

#[allow(deprecated)]
impl ClientHandler for Roots {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_roots().build(),
            Implementation::new("widget-agent", "1.0"),
        )
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let roots = self.0.lock().unwrap().clone();
        Ok(ListRootsResult::new(
            roots
                .iter()
                .map(|r| Root::new(format!("file://{r}")))
                .collect(),
        ))
    }
}

/// An MCP session through `browserctl mcp`, for [`Hands`] to call through.
pub(crate) struct Mcp {
    rt: tokio::runtime::Runtime,
    client: RunningService<RoleClient, Roots>,
    roots: Roots,
}

impl Mcp {
    pub(super) fn start(d: &TestDaemon) -> Mcp {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let roots = Roots::default();
        let client = rt.block_on(stdio_with(d, &[], roots.clone()));
        Mcp { rt, client, roots }
    }

    /// The directories the client declares from now on.
    pub(crate) fn set_roots(&self, roots: &[String]) {
        *self.roots.0.lock().unwrap() = roots.to_vec();
    }

    pub(crate) fn call(&self, tool: &str, tab: &str, mut args: Value) -> Result<Value, Failure> {
        args["tab"] = json!(tab);
        let r = self
            .rt
            .block_on(self.client.call_tool(params(tool, args)))
            .map_err(|e| Failure {
                code: "MCP".into(),
                message: e.to_string(),
            })?;
        if r.is_error == Some(true) {
            return Err(Failure {
                code: "MCP_TOOL_ERROR".into(),
                message: mcp_text(&r),
            });
        }
        Ok(serde_json::to_value(&r).unwrap())
    }

    pub(super) fn stop(self) {
        self.rt.block_on(self.client.cancel()).unwrap();
    }
}

type Task = fn(&mut Hands);

const TASKS: [(&str, Task); 14] = [
    ("plain elements with listeners", plain_listeners),
    (
        "a drop zone only geometry makes one (Playwright)",
        geometry_drop_zone,
    ),
    ("sortable list (SortableJS)", sortable),
    ("rich text (Quill)", rich_text),
    ("an editor in a frame (Quill)", framed_editor),
    ("code editor (CodeMirror 5)", code_editor),
    ("range slider (noUiSlider)", slider),
    ("file drop zone (Dropzone)", drop_zone),
    ("data grid (AG Grid)", grid),
    ("tooltip on hover (Tippy.js)", hover_tooltip),
    ("a menu CSS :hover alone opens", css_hover_menu),
    ("date picker (flatpickr)", date_picker),
    ("searchable select (Tom Select)", combobox),
    ("web components (Fluent UI)", web_components),
];

/// In Firefox, the tasks a second time over MCP: one of each kind of gesture (an HTML5 drag,
/// typing key by key, a drag to a position and keys, a double-click, hover). Chromium runs
/// them all over MCP.
const OVER_MCP_IN_FIREFOX: [&str; 5] = [
    "sortable list (SortableJS)",
    "code editor (CodeMirror 5)",
    "range slider (noUiSlider)",
    "data grid (AG Grid)",
    "tooltip on hover (Tippy.js)",
];

fn every_task(mut h: Hands, browser: &str) {
    let started = Instant::now();
    for (name, task) in TASKS {
        task(&mut h);
        eprintln!("{browser} widgets {:>6.1?} {name}", started.elapsed());
    }
    h.mcp = Some(Mcp::start(&h.d));
    for (name, task) in TASKS {
        if browser == "chromium" || OVER_MCP_IN_FIREFOX.contains(&name) {
            task(&mut h);
            eprintln!(
                "{browser} widgets {:>6.1?} {name}, over MCP",
                started.elapsed()
            );
        }
    }
    h.mcp.take().unwrap().stop();
    pages::print_p50(&h, &format!("widgets-p50-{browser}.txt"));
}

#[test]
fn widgets_in_chromium() {
    in_chromium(
        "browser::hands::widgets_in_chromium",
        "plain.html",
        every_task,
    );
}

#[test]
fn widgets_in_firefox() {
    in_firefox(
        "browser::hands::widgets_in_firefox",
        "plain.html",
        every_task,
    );
}

/// The ref of the first line that contains every one of `needles`.
fn ref_with(snap: &str, needles: &[&str]) -> Option<String> {
    let line = snap
        .lines()
        .find(|l| needles.iter().all(|n| l.contains(n)))?;
    find_ref(line, needles[0])
}

/// The ref on the line that follows the line containing `after` and contains `needle`.
fn ref_after(snap: &str, after: &str, needle: &str) -> Option<String> {
    let start = snap.lines().position(|l| l.contains(after))?;
    snap.lines().skip(start).find_map(|l| {
        if l.contains(needle) {
            find_ref(l, needle)
        } else {
            None
        }
    })
}

/// What the page world's listener notes give: a `<div>` drop zone and a `<span>` button made by
/// addEventListener, a control named only by CSS, and a grid of focusable rows whose header
/// label and cells are what one acts on.
fn plain_listeners(h: &mut Hands) {
    h.goto("widgets/plain.html");
    let snap = h.snapshot();
    let card = find_ref(&snap, "Card A").unwrap_or_else(|| panic!("{snap}"));
    let zone = ref_with(&snap, &["[dropzone", "Done"]).unwrap_or_else(|| panic!("{snap}"));
    let out = h.text("browser_drag", json!({"startRef": card, "endRef": zone}));
    assert!(out.contains("HTML5 drag and drop: dropped"), "{out}");
    assert_eq!(h.eval("state.dropped"), "card-a");
    let save = ref_with(&snap, &["[clickable", "Save draft"]).unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": save}));
    assert_eq!(h.eval("state.saved"), 1);
    let name = ref_with(&snap, &["[clickable", "Name"]).unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": name}));
    assert_eq!(h.eval("state.sorted"), true);
    let bob = ref_with(&snap, &["[gridcell", "Bob"]).unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": bob, "doubleClick": true}));
    assert_eq!(h.eval("state.editing"), "Bob");
}

/// Playwright's hand-made drag: the drop zone has no listener at all (the page checks where the
/// mouse was released); its short text in a box of its own gives it a ref.
fn geometry_drop_zone(h: &mut Hands) {
    h.goto("playwright/input/drag-n-drop-manual.html");
    let snap = h.snapshot();
    let from = find_ref(&snap, "Drag me").unwrap_or_else(|| panic!("{snap}"));
    let to = find_ref(&snap, "Drop here").unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_drag", json!({"startRef": from, "endRef": to}));
    assert_eq!(
        h.eval("document.getElementById('to').textContent"),
        "Dropped"
    );
}

fn sortable(h: &mut Hands) {
    h.goto("widgets/sortable.html");
    let snap = h.snapshot();
    let apple = find_ref(&snap, "Apple").unwrap_or_else(|| panic!("{snap}"));
    let cherry = find_ref(&snap, "Cherry").unwrap_or_else(|| panic!("{snap}"));
    let out = h.text("browser_drag", json!({"startRef": apple, "endRef": cherry}));
    assert!(out.contains("HTML5 drag and drop"), "{out}");
    h.wait(
        "SortableJS to move Apple below Cherry",
        "w.toArray().join() === 'banana,cherry,apple,date'",
    );
}

fn rich_text(h: &mut Hands) {
    h.goto("widgets/quill.html");
    let editor = h.ref_of("[textbox");
    h.call(
        "browser_type",
        json!({"ref": editor, "text": "Shopping list for the week"}),
    );
    h.wait(
        "Quill to hold the text",
        "w.getText() === 'Shopping list for the week\\n'",
    );
    // The last word, selected as a keyboard does, then bold by the toolbar's button.
    h.call("browser_press_key", json!({"ref": editor, "key": "End"}));
    h.call(
        "browser_press_key",
        json!({"ref": editor, "key": "Control+Shift+ArrowLeft"}),
    );
    let snap = h.snapshot();
    let bold = find_ref(&snap, "bold").unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": bold}));
    h.wait(
        "Quill to make 'week' bold",
        "JSON.stringify(w.getContents().ops).includes('{\"attributes\":{\"bold\":true},\"insert\":\"week\"}')",
    );
    // The header picker is named only by CSS (::before { content: "Normal" }).
    let picker = find_ref(&snap, "Normal").unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": picker}));
    let h1 = h.ref_of("Heading 1");
    h.call("browser_click", json!({"ref": h1}));
    h.wait(
        "Quill to make the line a heading",
        "w.getFormat(0, 1).header === 1",
    );
}

fn framed_editor(h: &mut Hands) {
    h.goto("widgets/iframe-editor.html");
    let snap = h.wait_snapshot("the editor in its frame", |s| {
        s.lines().any(|l| l.trim_start().starts_with("[textbox f"))
    });
    let editor = snap
        .lines()
        .find_map(|l| find_ref(l, "[textbox f"))
        .unwrap_or_else(|| panic!("{snap}"));
    h.call(
        "browser_type",
        json!({"ref": editor, "text": "Hello from the frame", "slowly": true}),
    );
    h.wait(
        "Quill in the frame to hold the text",
        // (Firefox types a space as a no-break space, as it does for a person's keys)
        "document.getElementById('compose').contentWindow.w.getText().replace(/\\u00a0/g, ' ') === 'Hello from the frame\\n'",
    );
}

fn code_editor(h: &mut Hands) {
    h.goto("widgets/codemirror.html");
    let code = h.ref_of("[textbox");
    h.call(
        "browser_type",
        json!({"ref": code, "text": "function add(a, b) {\nreturn a + b;\n}", "slowly": true}),
    );
    // The editor indents the body itself, and dedents the closing brace.
    h.wait(
        "CodeMirror to hold the function, indented",
        "w.getValue() === 'function add(a, b) {\\n  return a + b;\\n}'",
    );
}

fn slider(h: &mut Hands) {
    h.goto("widgets/slider.html");
    let snap = h.snapshot();
    let handle = find_ref(&snap, "[slider").unwrap_or_else(|| panic!("{snap}"));
    assert!(snap.contains("= \"20.00\""), "the handle's value: {snap}");
    h.call(
        "browser_press_key",
        json!({"ref": handle, "key": "ArrowRight"}),
    );
    h.wait("the slider to step up", "Number(w.get()) === 21");
    // The track is a <div> with a pointer listener and no text: it has a ref too.
    let lines: Vec<&str> = snap.lines().collect();
    let at = lines.iter().position(|l| l.contains("[slider")).unwrap();
    let track = lines[..at]
        .iter()
        .rev()
        .find_map(|l| find_ref(l, "[clickable"))
        .unwrap_or_else(|| panic!("no track before the handle: {snap}"));
    h.call(
        "browser_drag",
        json!({"startRef": handle, "endRef": track, "endPosition": {"x": 0.75}}),
    );
    h.wait(
        "the slider's handle dragged to three quarters",
        "Math.abs(Number(w.get()) - 75) <= 1",
    );
}

fn drop_zone(h: &mut Hands) {
    h.goto("widgets/dropzone.html");
    let zone = h.ref_of("Drop files here");
    let dir = upload_dir(h);
    let file = dir.path().join("invoice.txt");
    std::fs::write(&file, "total 12").unwrap();
    h.call("browser_file_upload", json!({"ref": zone, "paths": [file]}));
    h.wait(
        "Dropzone to take the file",
        "w.files.length >= 1 && w.files[w.files.length - 1].name === 'invoice.txt'",
    );
    h.eval("w.removeAllFiles(true), true");
}

fn grid(h: &mut Hands) {
    h.goto("widgets/grid.html");
    h.wait(
        "the grid's rows",
        "document.querySelector('.ag-row') !== null",
    );
    let snap = h.snapshot();
    let price = find_ref(&snap, "Price").unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": price}));
    h.wait(
        "AG Grid to sort by price",
        "w.getColumnState().find(c => c.colId === 'price').sort === 'asc'",
    );
    // The last row, far below and not rendered at all (the grid is virtualised): the grid's own
    // keyboard takes the focus there, and the grid scrolls it into view, as for a person.
    let first = ref_with(&snap, &["[gridcell", "Model "]).unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": first}));
    h.call("browser_press_key", json!({"key": "Control+ArrowDown"}));
    let last = h
        .eval("w.getDisplayedRowAtIndex(w.getDisplayedRowCount() - 1).data.model")
        .as_str()
        .unwrap()
        .to_owned();
    let needle = format!("] {last}");
    let snap = h.wait_snapshot("the last row, rendered", |s| {
        s.lines()
            .any(|l| l.starts_with("[gridcell") && l.ends_with(&needle))
    });
    let target = ref_with(&snap, &["[gridcell", &needle]).unwrap();
    h.call("browser_click", json!({"ref": target, "doubleClick": true}));
    let snap = h.wait_snapshot("the cell editor", |s| {
        s.lines()
            .any(|l| l.contains("[textbox") && l.contains(&last))
    });
    let editor = ref_after(&snap, "[textbox", &last).unwrap();
    h.call("browser_type", json!({"ref": editor, "text": "Renamed"}));
    h.call("browser_press_key", json!({"ref": editor, "key": "Enter"}));
    h.wait(
        "AG Grid to store the edit",
        &format!(
            "w.getRowNode(String({})).data.model === 'Renamed'",
            last.trim_start_matches("Model ")
        ),
    );
}

fn hover_tooltip(h: &mut Hands) {
    h.goto("widgets/hover.html");
    let help = h.ref_of("What is this?");
    h.call("browser_hover", json!({"ref": help}));
    h.wait("Tippy to show its tooltip", "w.state.isShown === true");
    h.wait_snapshot("the tooltip's text", |s| s.contains("renews on the first"));
}

/// No script opens this menu: `.menu:hover > .submenu` does, which only the pointer sets.
fn css_hover_menu(h: &mut Hands) {
    h.goto("widgets/css-hover-menu.html");
    let snap = h.snapshot();
    assert!(!snap.contains("Settings"), "the menu starts shut:\n{snap}");
    let account = h.ref_of("Account");
    let r = h.call("browser_hover", json!({"ref": account}));
    assert!(all_text(&r).contains(":hover styles apply"), "{r}");
    let snap = h.wait_snapshot("the menu to open", |s| s.contains("Settings"));
    let settings = ref_with(&snap, &["[link", "Settings"]).unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": settings}));
    h.wait("the page to hear the choice", "w.chosen === 'settings'");
    // The click left the pointer over the menu, which stays open; going elsewhere shuts it.
    assert!(h.snapshot().contains("Sign out"), "the menu is still open");
    let refresh = h.ref_of("Refresh");
    h.call("browser_hover", json!({"ref": refresh}));
    h.wait_snapshot("the menu to shut", |s| !s.contains("Sign out"));
}

fn date_picker(h: &mut Hands) {
    h.goto("widgets/datepicker.html");
    let day = h.ref_of("[textbox");
    h.call("browser_click", json!({"ref": day}));
    h.wait("the calendar to open", "w.isOpen === true");
    let pick = h.ref_of("March 14, 2025");
    h.call("browser_click", json!({"ref": pick}));
    h.wait(
        "flatpickr to hold the 14th",
        "w.selectedDates.length === 1 && w.formatDate(w.selectedDates[0], 'Y-m-d') === '2025-03-14'",
    );
}

fn combobox(h: &mut Hands) {
    h.goto("widgets/combobox.html");
    let snap = h.snapshot();
    let city = ref_with(&snap, &["[combobox", "City"]).unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": city}));
    h.call(
        "browser_type",
        json!({"ref": city, "text": "ber", "slowly": true}),
    );
    let snap = h.wait_snapshot("the filtered options", |s| {
        let option = |name: &str| {
            s.lines()
                .any(|l| l.starts_with("[option") && l.contains(name))
        };
        option("Bergen") && !option("Tokyo")
    });
    let bergen = ref_with(&snap, &["[option", "Bergen"]).unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": bergen}));
    h.wait("Tom Select to hold Bergen", "w.getValue() === 'ber'");
    // Several values.
    for tag in ["Fjords", "Seaside"] {
        let snap = h.snapshot();
        let tags = ref_with(&snap, &["[combobox", "Tags"]).unwrap_or_else(|| panic!("{snap}"));
        h.call("browser_click", json!({"ref": tags}));
        h.call("browser_type", json!({"ref": tags, "text": &tag[..3]}));
        let snap = h.wait_snapshot("the tag", |s| {
            s.lines().any(|l| l.contains("[option") && l.contains(tag))
        });
        let option = ref_with(&snap, &["[option", tag]).unwrap_or_else(|| panic!("{snap}"));
        h.call("browser_click", json!({"ref": option}));
    }
    h.wait(
        "Tom Select to hold two tags",
        "JSON.stringify(w2.getValue()) === '[\"fjd\",\"sea\"]'",
    );
}

/// A design system's select, checkbox and dialog, each a custom element with a shadow root.
fn web_components(h: &mut Hands) {
    h.goto("widgets/webcomponents.html");
    h.wait(
        "the components",
        "window.ready === true && customElements.get('fluent-select') !== undefined",
    );
    let snap = h.snapshot();
    let size = ref_with(&snap, &["[combobox", "Size"]).unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": size}));
    let snap = h.wait_snapshot("the open select", |s| {
        s.lines()
            .any(|l| l.starts_with("[option") && l.contains("Large"))
    });
    let large = ref_with(&snap, &["[option", "Large"]).unwrap();
    h.call("browser_click", json!({"ref": large}));
    h.wait(
        "the select to hold Large",
        "document.getElementById('size').value === 'l'",
    );
    let terms =
        ref_with(&snap, &["[checkbox", "I accept the terms"]).unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": terms}));
    h.wait(
        "the box to be checked",
        "document.getElementById('terms').checked === true",
    );
    let open =
        ref_with(&snap, &["[button", "Shipping details"]).unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": open}));
    let snap = h.wait_snapshot("the dialog", |s| s.contains("Close the details"));
    let close =
        ref_with(&snap, &["[button", "Close the details"]).unwrap_or_else(|| panic!("{snap}"));
    h.call("browser_click", json!({"ref": close}));
    h.wait(
        "the dialog to close",
        "document.getElementById('details').hidden === true",
    );
}
