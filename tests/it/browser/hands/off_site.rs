//! A site turned off shows an agent nothing of itself (issue 35, item 4), even inside another
//! site's page: not its frame, nor the srcdoc, blob: and about:blank frames it writes, nor an
//! allowed site's frame inside it; not its console, its requests or their bodies; not its
//! pixels in a screenshot; not the page a navigation or a tab list would show. And its tabs
//! are not closed for an agent.

use super::*;
use serde_json::json;

const KIDS: [&str; 4] = ["Srcdoc", "Blob", "Blank", "Nested"];

pub(super) fn off_site(h: &mut Hands) {
    let bank = h.origin.replace("127.0.0.1", "localhost");
    h.call("browser_network_requests", json!({"captureBodies": true}));
    h.goto("hands-off-frames.html");
    let snap = h.wait_snapshot("the bank frame and the frames it wrote", |s| {
        ["Frame text bank", "Srcdoc secret", "Blank secret"]
            .iter()
            .all(|k| s.contains(k))
            && s.contains("Frame text nested")
    });
    // Chromium's webNavigation does not list blob: frames, so no snapshot shows one there (and
    // a ref into one is refused): the blob: frame is only checked where it was shown.
    let kids: Vec<&str> = KIDS
        .into_iter()
        .filter(|k| *k != "Blob" || snap.contains("Blob field"))
        .collect();
    assert!(h.firefox() || kids.len() == 3, "{snap}");
    let field = |kid: &str| {
        let label = if kid == "Nested" {
            "Field nested".to_owned()
        } else {
            format!("{kid} field")
        };
        find_ref(&snap, &label).unwrap_or_else(|| panic!("no {label:?} in\n{snap}"))
    };
    let fields: Vec<(&str, String)> = kids.iter().map(|k| (*k, field(k))).collect();
    // While the site is on, every one of them is the agent's to use.
    for (kid, r) in &fields {
        let out = h.text("browser_type", json!({"ref": r, "text": "typed"}));
        assert!(out.contains("Typed"), "{kid}: {out}");
    }
    let console = h.text("browser_console_messages", json!({}));
    assert!(console.contains("frame says bank"), "{console}");

    h.set_sites(json!({ bank.clone(): {"mode": "off"} }));
    let snap = h.wait_snapshot("the bank frame hidden", |s| s.contains("turned off"));
    for secret in [
        "Frame text bank",
        "Srcdoc secret",
        "Blob secret",
        "Blank secret",
    ] {
        assert!(!snap.contains(secret), "{secret} shown:\n{snap}");
    }
    assert!(
        !snap.contains("Frame text nested"),
        "nor an allowed site's frame inside it:\n{snap}"
    );
    for (kid, r) in &fields {
        let msg = h.refused(
            "browser_type",
            json!({"ref": r, "text": "leak"}),
            "SITE_DISABLED",
        );
        assert!(msg.contains(&bank), "{kid}: {msg}");
        h.refused("browser_snapshot", json!({"ref": r}), "SITE_DISABLED");
    }

    // Loaded while off: what the bank's frames log and send is not recorded, what the allowed
    // frame does is (so the log is being kept). Read after cursors taken now: what came before
    // was recorded while the site was on.
    let cursor = |h: &mut Hands, tool: &str| {
        h.call(tool, json!({}))["structuredContent"]["cursor"]
            .as_u64()
            .unwrap_or_else(|| panic!("a cursor from {tool}"))
    };
    let net = json!({"since": cursor(h, "browser_network_requests"), "maxChars": 100000});
    let con = json!({"since": cursor(h, "browser_console_messages")});
    h.goto("hands-off-frames.html");
    h.wait(
        "the bank frame's own frames",
        "document.getElementById('bank').contentWindow.frames.length === 4",
    );
    let reqs = h.until_text(
        "the allowed frame's form body",
        ("browser_network_requests", net.clone()),
        |t| t.contains("hunter2-allowed"),
    );
    let console = h.until_text(
        "the allowed frame's console",
        ("browser_console_messages", con.clone()),
        |t| t.contains("frame says allowed"),
    );
    // A moment for anything of the bank's that would come late.
    std::thread::sleep(Duration::from_millis(500));
    let reqs = format!("{reqs}\n{}", h.call("browser_network_requests", net));
    let console = format!("{console}\n{}", h.call("browser_console_messages", con));
    for leak in ["localhost", "hunter2-bank", "hunter2-nested", "?nested"] {
        assert!(!reqs.contains(leak), "{leak} in the network log:\n{reqs}");
    }
    for leak in ["frame says bank", "srcdoc says", "frame says nested"] {
        assert!(!console.contains(leak), "{leak} in the console:\n{console}");
    }

    // Navigating there is refused; the tab stays where it was.
    let msg = h.refused(
        "browser_navigate",
        json!({"url": format!("{bank}/hands-names.html")}),
        "SITE_DISABLED",
    );
    assert!(msg.contains("not navigated"), "{msg}");
    assert_eq!(h.eval("location.pathname"), "/hands-off-frames.html");

    // A screenshot paints the bank's frame over, and only it. The page itself decodes the PNG.
    let shot = h.call("browser_screenshot", json!({}));
    let text = all_text(&shot);
    assert!(text.contains("1 frame of a site hidden"), "{text}");
    // Where `id`'s middle is in `png`, read by the page: in the viewport, or in the document
    // for a full-page shot.
    let pixel_at = |h: &mut Hands, png: &str, id: &str, page: bool| {
        let (dx, dy) = if page {
            ("scrollX", "scrollY")
        } else {
            ("0", "0")
        };
        h.eval(&format!(
            "new Promise((res) => {{ const img = new Image(); img.onload = () => {{ \
               const c = document.createElement('canvas'); c.width = img.width; c.height = img.height; \
               const g = c.getContext('2d'); g.drawImage(img, 0, 0); \
               const r = document.getElementById('{id}').getBoundingClientRect(); const k = img.width / innerWidth; \
               res(Array.from(g.getImageData(Math.round((r.x + {dx} + r.width / 2) * k), Math.round((r.y + {dy} + r.height / 2) * k), 1, 1).data).slice(0, 3)); }}; \
             img.src = 'data:image/png;base64,{png}'; }})"
        ))
    };
    let png = shot["content"][0]["data"].as_str().unwrap().to_owned();
    assert_eq!(
        pixel_at(h, &png, "bank", false),
        json!([0x5f, 0x63, 0x68]),
        "the bank frame is painted over"
    );
    assert_ne!(
        pixel_at(h, &png, "allowed", false),
        json!([0x5f, 0x63, 0x68]),
        "the allowed frame is not"
    );
    // And in a whole page taken while scrolled (in Firefox one capture of the document, in
    // Chromium stitched screenfuls): the mask moves with the page.
    h.eval("(document.body.style.minHeight = '2400px', scrollTo(0, 37), scrollY)");
    let shot = h.call("browser_screenshot", json!({"fullPage": true}));
    assert!(
        all_text(&shot).contains("1 frame of a site hidden"),
        "{}",
        all_text(&shot)
    );
    let png = shot["content"][0]["data"].as_str().unwrap().to_owned();
    assert_eq!(
        pixel_at(h, &png, "bank", true),
        json!([0x5f, 0x63, 0x68]),
        "the bank frame is painted over in the whole page"
    );
    assert_ne!(
        pixel_at(h, &png, "allowed", true),
        json!([0x5f, 0x63, 0x68]),
        "the allowed frame is not, in the whole page"
    );
    h.eval("(document.body.style.minHeight = '', scrollTo(0, 0), scrollY)");

    // A tab of the site: listed by its origin only, and not closed for an agent.
    let opened = h.call(
        "browser_tabs",
        json!({"action": "open", "url": format!("{bank}/hands-names.html"), "background": true}),
    );
    let id = opened["structuredContent"]["tab"]["id"].as_i64().unwrap();
    let browser = h.tab.split(':').next().unwrap().to_owned();
    let tab_ref = format!("{browser}:{id}");
    let listed = h.until_value("the bank tab to load", ("browser_tabs", json!({})), |v| {
        v["structuredContent"]["tabs"]
            .as_array()?
            .iter()
            .find(|t| t["id"] == id)
            .cloned()
    });
    assert_eq!(listed["url"], format!("{bank}/"), "{listed}");
    assert_eq!(listed["title"], "", "{listed}");
    assert_eq!(listed["siteOff"], true, "{listed}");
    // Once loaded, the daemon still knows it by its origin alone.
    wait_until(Duration::from_secs(30), "the bank tab to load", || {
        let complete = h.o.eval_in_extension(&format!(
            "chrome.tabs.get({id}).then((t) => t.status === 'complete')"
        ));
        (complete == true).then_some(())
    });
    h.o.close_extension_page();
    let tabs = h.d.ctl_json(&["tabs"]);
    let seen = tabs["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["ref"] == tab_ref.as_str())
        .unwrap_or_else(|| panic!("{tab_ref} in {tabs}"))
        .clone();
    assert_eq!(seen["url"], format!("{bank}/"), "{seen}");
    assert_eq!(seen["title"], "", "{seen}");
    assert!(!tabs.to_string().contains("Accessible names"), "{tabs}");
    let out = h.d.ctl(&["--json", "close", &tab_ref]);
    assert_eq!(exit_code(&out), 7, "{}", stderr(&out));
    assert!(stderr(&out).contains("SITE_DISABLED"), "{}", stderr(&out));
    let still = h.d.ctl_json(&["tabs"]);
    assert!(still.to_string().contains(&tab_ref), "{still}");

    // Back on: the tab is the agent's again.
    h.set_sites(json!({}));
    let out = h.d.ctl(&["close", &tab_ref]);
    assert_eq!(exit_code(&out), 0, "{}", stderr(&out));
}
