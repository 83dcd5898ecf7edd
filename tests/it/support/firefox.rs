//! Headless Firefox ESR for the browser tests, driven over WebDriver BiDi (no driver binary):
//! `firefox-esr --headless --remote-debugging-port=0 --profile DIR` prints its BiDi WebSocket
//! on stderr; the test starts a session and installs extension/ as a temporary add-on.
//!
//! Each launch gets a fresh profile whose user.js keeps Firefox off the network (no updates,
//! telemetry, studies, captive-portal or connectivity checks, remote settings, Safe Browsing,
//! DNS-over-HTTPS; every non-loopback request goes to a dead proxy), and its own HOME, where
//! `browserctl install-native-host --browser firefox` puts the host manifest Firefox reads.
//! The process group is killed and both directories removed on drop.

use crate::support::bidi::{Bidi, Context};
use crate::support::chromium::{paired, pairing_script};
use crate::support::common::{skip, TestDaemon};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Start-up, page loads and BiDi commands on a loaded two-core machine.
pub const FIREFOX_WAIT: Duration = Duration::from_secs(60);

/// Fixed by `browser_specific_settings.gecko.id` in extension/manifest.json.
pub const GECKO_ID: &str = "browser-mcp@browsermcp.dev";

/// The extension's moz-extension:// host in our test profiles (Firefox picks a random UUID per
/// installation unless the profile names one).
pub const EXTENSION_UUID: &str = "4c6d1a52-7a3e-4b9e-9f0d-6b2c1e8a5d17";

/// Firefox, or None after a loud SKIPPED banner; under CI=true a missing browser fails the test
/// instead. `BROWSER_MCP_FIREFOX` names another binary.
pub fn firefox_or_skip(test: &str) -> Option<PathBuf> {
    let path = std::env::var_os("BROWSER_MCP_FIREFOX")
        .map(PathBuf::from)
        .or_else(|| {
            ["/usr/bin/firefox-esr", "/usr/lib/firefox-esr/firefox-esr"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from("/usr/bin/firefox-esr"));
    if path.is_file() {
        return Some(path);
    }
    skip(
        test,
        &format!("no Firefox at {}", path.display()),
        "apt-get install firefox-esr, or set BROWSER_MCP_FIREFOX",
    );
    None
}

/// What a launch varies.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Firefox's own WebMCP (`dom.modelcontext.enabled`); off: the extension's shim.
    pub native_webmcp: bool,
    /// Where downloads land, without asking.
    pub downloads: Option<PathBuf>,
}

/// A headless Firefox with our extension installed, and a BiDi session to it.
pub struct Firefox {
    process: Process,
    pub bidi: Bidi,
    /// HOME of the browser (where `install-native-host` put the host manifest it reads); kept
    /// until the browser is gone.
    _home: tempfile::TempDir,
    _profile: tempfile::TempDir,
}

/// A Firefox process in a process group of its own (its content processes and the native host
/// it starts are in it too); the group is killed on drop.
pub struct Process {
    child: Child,
    log: PathBuf,
}

/// The profile's user.js.
fn prefs(o: &Options) -> String {
    let mut p = vec![
        // Nothing to update, report or fetch.
        ("app.update.disabledForTesting", "true"),
        ("app.update.auto", "false"),
        ("app.normandy.enabled", "false"),
        ("app.shield.optoutstudies.enabled", "false"),
        ("messaging-system.rsexperimentloader.enabled", "false"),
        ("datareporting.policy.dataSubmissionEnabled", "false"),
        ("datareporting.healthreport.uploadEnabled", "false"),
        ("toolkit.telemetry.enabled", "false"),
        ("toolkit.telemetry.unified", "false"),
        ("toolkit.telemetry.server", "\"\""),
        ("network.captive-portal-service.enabled", "false"),
        ("network.connectivity-service.enabled", "false"),
        ("network.trr.mode", "5"),
        ("network.dns.disablePrefetch", "true"),
        ("network.prefetch-next", "false"),
        ("network.http.speculative-parallel-limit", "0"),
        ("services.settings.server", "\"http://127.0.0.1:9/\""),
        ("browser.safebrowsing.malware.enabled", "false"),
        ("browser.safebrowsing.phishing.enabled", "false"),
        ("browser.safebrowsing.downloads.enabled", "false"),
        ("browser.safebrowsing.blockedURIs.enabled", "false"),
        ("browser.safebrowsing.provider.mozilla.updateURL", "\"\""),
        ("browser.search.update", "false"),
        ("browser.region.update.enabled", "false"),
        ("browser.region.network.url", "\"\""),
        ("geo.provider.network.url", "\"\""),
        ("media.gmp-manager.updateEnabled", "false"),
        ("extensions.update.enabled", "false"),
        ("extensions.getAddons.cache.enabled", "false"),
        ("extensions.blocklist.enabled", "false"),
        ("extensions.systemAddon.update.enabled", "false"),
        ("browser.topsites.contile.enabled", "false"),
        ("browser.newtabpage.enabled", "false"),
        (
            "browser.newtabpage.activity-stream.feeds.system.topstories",
            "false",
        ),
        ("browser.newtabpage.activity-stream.feeds.snippets", "false"),
        // Whatever the list above missed: every request that is not for loopback goes to a
        // proxy nobody listens on (loopback is never proxied).
        ("network.proxy.type", "1"),
        ("network.proxy.http", "\"127.0.0.1\""),
        ("network.proxy.http_port", "9"),
        ("network.proxy.ssl", "\"127.0.0.1\""),
        ("network.proxy.ssl_port", "9"),
        ("network.proxy.share_proxy_settings", "true"),
        // A quiet start on a blank page.
        ("browser.shell.checkDefaultBrowser", "false"),
        ("browser.startup.page", "0"),
        ("browser.startup.homepage", "\"about:blank\""),
        ("browser.startup.homepage_override.mstone", "\"ignore\""),
        ("browser.aboutwelcome.enabled", "false"),
        ("startup.homepage_welcome_url", "\"about:blank\""),
        // The extension's console in the log.
        ("devtools.console.stdout.chrome", "true"),
        // Firefox suspends an idle event page after this long. Below the extension's 30 s
        // watchdog alarm (which would otherwise mask a failing keep-alive by waking it) and
        // above its 20 s ping: only the ping's keep-alive can hold a connection open.
        ("extensions.background.idle.timeout", "25000"),
    ];
    p.push((
        "dom.modelcontext.enabled",
        if o.native_webmcp { "true" } else { "false" },
    ));
    let mut text: String = p
        .iter()
        .map(|(k, v)| format!("user_pref(\"{k}\", {v});\n"))
        .collect();
    if let Some(dir) = &o.downloads {
        let dir = serde_json::Value::String(dir.display().to_string());
        for (k, v) in [
            ("browser.download.folderList", "2".to_owned()),
            ("browser.download.dir", dir.to_string()),
            ("browser.download.useDownloadDir", "true".to_owned()),
            (
                "browser.download.always_ask_before_handling_new_types",
                "false".to_owned(),
            ),
            (
                "browser.download.start_downloads_in_tmp_dir",
                "false".to_owned(),
            ),
            ("browser.download.alwaysOpenPanel", "false".to_owned()),
            (
                "browser.download.manager.addToRecentDocs",
                "false".to_owned(),
            ),
        ] {
            text.push_str(&format!("user_pref(\"{k}\", {v});\n"));
        }
    }
    // The extension's pages at a known address: a JSON object inside a JS string.
    let uuids = serde_json::json!({ GECKO_ID: EXTENSION_UUID }).to_string();
    text.push_str(&format!(
        "user_pref(\"extensions.webextensions.uuids\", {});\n",
        serde_json::Value::String(uuids)
    ));
    text
}

/// Writes the profile's user.js: [`prefs`] and `extra` lines.
pub fn write_prefs(profile: &Path, o: &Options, extra: &str) {
    std::fs::write(profile.join("user.js"), prefs(o) + extra).unwrap();
}

impl Process {
    /// Starts headless Firefox on `profile` (prefs written beforehand) with HOME at `home`;
    /// `remote`: with its WebDriver BiDi server, whose address is returned.
    pub fn spawn(
        exe: &Path,
        profile: &Path,
        home: &Path,
        log: &Path,
        remote: bool,
    ) -> (Process, Option<String>) {
        let mut out = File::create(log).unwrap();
        let mut cmd = Command::new(exe);
        cmd.args(["--headless", "--no-remote"]);
        if remote {
            cmd.arg("--remote-debugging-port=0")
                // Lets BiDi open the extension's own pages (moz-extension://), as DevTools
                // does in Chromium; web pages still cannot.
                .arg("--remote-allow-system-access");
        }
        let mut child = cmd
            .arg("--profile")
            .arg(profile)
            .arg("about:blank")
            .env("HOME", home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("XDG_DATA_HOME")
            .env("MOZ_CRASHREPORTER_DISABLE", "1")
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("launch {}: {e}", exe.display()));
        // stderr goes to the log; the BiDi address is picked out on the way.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if let Some(url) = line.split("WebDriver BiDi listening on ").nth(1) {
                    let _ = tx.send(url.trim().to_owned());
                }
                let _ = writeln!(out, "{line}");
            }
        });
        let process = Process {
            child,
            log: log.to_path_buf(),
        };
        if !remote {
            return (process, None);
        }
        match rx.recv_timeout(FIREFOX_WAIT) {
            Ok(url) => (process, Some(url)),
            Err(_) => panic!(
                "Firefox printed no BiDi address within {FIREFOX_WAIT:?}:\n{}",
                process.log_tail()
            ),
        }
    }

    pub fn log_tail(&self) -> String {
        tail(&self.log, 40)
    }

    /// SIGKILL to the browser process alone, as in a crash: its content processes and the
    /// native host must notice by themselves.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Firefox {
    /// Starts Firefox on about:blank, connects BiDi and installs extension/.
    pub fn launch(exe: &Path, o: &Options) -> Firefox {
        Firefox::launch_with_home(exe, o, tempfile::tempdir().unwrap())
    }

    /// [`Firefox::launch`] with a HOME prepared beforehand (e.g. with a native host in it).
    pub fn launch_with_home(exe: &Path, o: &Options, home: tempfile::TempDir) -> Firefox {
        Firefox::launch_after(exe, o, home, None)
    }

    /// [`Firefox::launch`], with `url` loaded in the first tab before the extension is
    /// installed: a page from before the extension, as after an install or an update.
    pub fn launch_showing_first(exe: &Path, o: &Options, url: &str) -> (Firefox, Context) {
        let mut shown = None;
        let ff = Firefox::launch_after(
            exe,
            o,
            tempfile::tempdir().unwrap(),
            Some((url, &mut shown)),
        );
        (ff, shown.expect("the first tab"))
    }

    fn launch_after(
        exe: &Path,
        o: &Options,
        home: tempfile::TempDir,
        first: Option<(&str, &mut Option<Context>)>,
    ) -> Firefox {
        let profile = tempfile::tempdir().unwrap();
        write_prefs(profile.path(), o, "");
        let log = home.path().join("firefox.log");
        let (process, endpoint) = Process::spawn(exe, profile.path(), home.path(), &log, true);
        let endpoint = endpoint.expect("a BiDi address");
        let bidi = Bidi::connect(&endpoint, FIREFOX_WAIT)
            .unwrap_or_else(|e| panic!("{e}\n{}", process.log_tail()));
        let mut ff = Firefox {
            process,
            bidi,
            _home: home,
            _profile: profile,
        };
        if let Some((url, shown)) = first {
            *shown = Some(ff.show(url));
        }
        let extension = Path::new(env!("CARGO_MANIFEST_DIR")).join("extension");
        let id = ff
            .bidi
            .install_extension(&extension)
            .unwrap_or_else(|e| panic!("install {}: {e}\n{}", extension.display(), ff.log_tail()));
        assert_eq!(id, GECKO_ID, "the gecko id of extension/manifest.json");
        ff
    }

    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }

    /// Loads `url` in the first tab (about:blank at start).
    pub fn show(&mut self, url: &str) -> Context {
        let tabs = self.bidi.tabs().unwrap_or_else(|e| panic!("{e}"));
        let ctx = tabs.into_iter().next().expect("Firefox has a tab");
        self.go(&ctx, url);
        ctx
    }

    /// A new tab showing `url`.
    pub fn open(&mut self, url: &str) -> Context {
        let ctx = self.bidi.new_tab().unwrap_or_else(|e| panic!("{e}"));
        self.go(&ctx, url);
        ctx
    }

    pub fn go(&mut self, ctx: &Context, url: &str) {
        if let Err(e) = self.bidi.navigate(ctx, url) {
            panic!("navigate to {url}: {e}\n{}", self.log_tail());
        }
    }

    /// The extension's own page (ui/popup.html?tab=7, ui/options.html) in a new tab.
    pub fn open_extension_page(&mut self, path: &str) -> Context {
        self.open(&format!("moz-extension://{EXTENSION_UUID}/{path}"))
    }

    pub fn eval(&mut self, ctx: &Context, expr: &str) -> serde_json::Value {
        self.bidi
            .eval(ctx, expr)
            .unwrap_or_else(|e| panic!("{e}\n{}", self.log_tail()))
    }

    /// Polls `expr` until it is truthy; returns its value.
    pub fn wait_for(&mut self, ctx: &Context, what: &str, expr: &str) -> serde_json::Value {
        let start = std::time::Instant::now();
        loop {
            let last = self.bidi.eval(ctx, expr);
            match &last {
                Ok(v) if !matches!(v, serde_json::Value::Null | serde_json::Value::Bool(false)) => {
                    return v.clone()
                }
                _ if start.elapsed() > FIREFOX_WAIT => panic!(
                    "timed out waiting for {what}: {expr} is {last:?}\n{}",
                    self.log_tail()
                ),
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Pairs this Firefox with `d` the way a person does (issue 21), as `pair_browser` does for
    /// Chromium: `browserctl pair` prints a code, the code goes into the extension's settings
    /// page (opened as a tab, closed afterwards), Pair is pressed, and the page says it is
    /// paired. While the scan has not found the daemon the page says so; then the person tries
    /// again. Returns the code.
    pub fn pair(&mut self, d: &TestDaemon) -> String {
        let printed = d.ctl_json(&["pair", "--no-wait"]);
        let code = printed["code"].as_str().expect("a code").to_owned();
        let options = self.open_extension_page("ui/options.html");
        let attempt = pairing_script(&code);
        let start = std::time::Instant::now();
        loop {
            let verdict = self.eval(&options, &attempt);
            let verdict = verdict.as_str().unwrap_or("").to_owned();
            match paired(&verdict) {
                Some(true) => break,
                // Nothing yet: the scan has not found the daemon.
                None if start.elapsed() < FIREFOX_WAIT => {}
                _ => panic!(
                    "pairing failed: {verdict:?}\n--- daemon ---\n{}\n--- firefox ---\n{}",
                    d.log(),
                    self.log_tail()
                ),
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        self.bidi
            .close(&options)
            .unwrap_or_else(|e| panic!("close the options page: {e}"));
        code
    }

    /// The person chooses *Allow everywhere* in the extension's settings page (see
    /// [`crate::support::chromium::ALLOW_EVERYWHERE`]), which then closes.
    pub fn allow_everywhere(&mut self) {
        let options = self.open_extension_page("ui/options.html");
        let chosen = self.eval(&options, crate::support::chromium::ALLOW_EVERYWHERE);
        assert_eq!(
            chosen,
            serde_json::json!(true),
            "Allow everywhere, in the options page"
        );
        self.bidi
            .close(&options)
            .unwrap_or_else(|e| panic!("close the options page: {e}"));
    }

    /// SIGKILL to the browser process alone (see [`Process::kill`]).
    pub fn kill(&mut self) {
        self.process.kill();
    }
}

fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
