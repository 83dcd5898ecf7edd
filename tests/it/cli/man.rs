//! The man pages in man/ are generated from the clap definitions (clap_mangen) plus the
//! hand-written sections in man/src/. This test fails when a committed page is stale;
//! `BROWSER_MCP_UPDATE_MAN=1 cargo test --test it man_pages` rewrites them.

use browser_mcp::ctl::{Cli, EXIT_CODES_HELP};
use browser_mcp::daemon::Config;
use clap::CommandFactory;
use clap_mangen::Man;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The date on the pages: the release's, changed with the version (not today's, so that the
/// pages are reproducible).
const DATE: &str = "2026-05-01";

/// One section's body: without the string-definition preamble clap_mangen puts before every
/// part, and without its `.SH` line.
fn body(roff: Vec<u8>) -> String {
    let text = String::from_utf8(roff).expect("roff is UTF-8");
    text.lines()
        .filter(|l| !l.starts_with(".ie \\n(.g .ds Aq") && !l.starts_with(".el .ds Aq"))
        .skip_while(|l| l.starts_with(".SH"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Plain text as roff.
fn escape(text: &str) -> String {
    text.lines()
        .map(|l| {
            let l = l.trim().replace('\\', "\\e").replace('-', "\\-");
            if l.is_empty() {
                ".PP\n".to_owned()
            } else if l.starts_with(['.', '\'']) {
                format!("\\&{l}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

/// What `mandoc -Tlint` asks of the generated text: no trailing blanks, text lines of at most
/// 80 bytes (filled text may be broken at any space), no blank line between two `.br`.
fn tidy(page: &str) -> String {
    let page: String = page
        .replace("\n.br\n\n.br\n", "\n.br\n")
        .chars()
        .map(|c| {
            if c.is_ascii() {
                c.to_string()
            } else {
                format!("\\[u{:04X}]", c as u32)
            }
        })
        .collect();
    let mut out = String::new();
    let mut fill = true;
    for line in page.lines() {
        let line = line.trim_end();
        if line.starts_with(".nf") {
            fill = false;
        } else if line.starts_with(".fi") {
            fill = true;
        }
        if !fill || line.len() <= 80 || line.starts_with(['.', '\'']) {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let mut current = String::new();
        for word in line.split(' ').filter(|w| !w.is_empty()) {
            if !current.is_empty() && current.len() + 1 + word.len() > 80 {
                out.push_str(&current);
                out.push('\n');
                current.clear();
            }
            if current.is_empty() {
                if word.starts_with(['.', '\'']) {
                    current.push_str("\\&");
                }
            } else {
                current.push(' ');
            }
            current.push_str(word);
        }
        out.push_str(&current);
        out.push('\n');
    }
    out
}

fn hand_written(name: &str) -> String {
    let path = Path::new(ROOT).join("man/src").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn man(cmd: clap::Command, section: &str) -> Man {
    let title = cmd.get_name().to_uppercase();
    Man::new(cmd)
        .title(title)
        .section(section)
        .date(DATE)
        .source(format!("browser-mcp {}", env!("CARGO_PKG_VERSION")))
        // browser-mcpd is a per-user daemon, started by the user (like ssh-agent): section 1.
        .manual("User Commands")
}

fn render(m: &Man, part: fn(&Man, &mut dyn std::io::Write) -> std::io::Result<()>) -> Vec<u8> {
    let mut out = Vec::new();
    part(m, &mut out).expect("render");
    out
}

/// A page's title, name, synopsis, description and options, as clap_mangen renders them.
fn head(m: &Man) -> String {
    let mut page = String::new();
    for part in [
        Man::render_title,
        Man::render_name_section,
        Man::render_synopsis_section,
        Man::render_description_section,
        Man::render_options_section,
    ] {
        page.push_str(&String::from_utf8(render(m, part)).unwrap());
    }
    page
}

fn daemon_page() -> String {
    let m = man(Config::command(), "1");
    let mut page = head(&m);
    page.push_str(&hand_written("browser-mcpd.1"));
    tidy(&page)
}

/// `Exit codes:` lines of `browserctl --help` as a tagged list.
fn exit_status() -> String {
    let mut out = String::from(".SH \"EXIT STATUS\"\n");
    for line in EXIT_CODES_HELP.lines().skip(1) {
        let (code, what) = line.trim().split_once(' ').expect("code and text");
        out.push_str(&format!(".TP\n.B {code}\n{}\n", what.trim()));
    }
    out.push_str(".PP\n\\fBbrowserctl doctor\\fR exits 1 when any check fails.\n");
    out
}

fn ctl_page() -> String {
    let mut cli = Cli::command();
    cli.build();
    let m = man(cli.clone(), "1");
    let mut page = head(&m);
    page.push_str(".SH COMMANDS\n");
    page.push_str("Each command also takes the global options above.\n");
    for sub in cli
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let name = format!("browserctl {}", sub.get_name());
        // The global options are described once, above.
        let mut sub = sub.clone().bin_name(&name);
        let hidden: Vec<clap::Id> = sub
            .get_arguments()
            .filter(|a| a.is_global_set() || a.get_id() == "help")
            .map(|a| a.get_id().clone())
            .collect();
        for id in hidden {
            sub = sub.mut_arg(id, |a| a.hide(true));
        }
        let sm = man(sub.clone(), "1");
        page.push_str(&format!(".SS \"{name}\"\n"));
        page.push_str(&body(render(&sm, Man::render_synopsis_section)));
        if let Some(about) = sub.get_long_about().or(sub.get_about()) {
            page.push_str(".PP\n");
            page.push_str(&escape(&about.to_string()));
        }
        if sub
            .get_arguments()
            .any(|a| !a.is_hide_set() && !a.is_positional())
        {
            page.push_str(&body(render(&sm, Man::render_options_section)));
        }
    }
    page.push_str(&exit_status());
    page.push_str(&hand_written("browserctl.1"));
    tidy(&page)
}

#[test]
fn man_pages_are_current() {
    let pages = [
        ("man/browser-mcpd.1", daemon_page()),
        ("man/browserctl.1", ctl_page()),
    ];
    let update = std::env::var_os("BROWSER_MCP_UPDATE_MAN").is_some();
    for (file, fresh) in pages {
        let path = Path::new(ROOT).join(file);
        if update {
            std::fs::write(&path, &fresh).unwrap();
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == fresh,
            "{file} is stale: the flags or the hand-written parts in man/src changed. \
             Regenerate with `BROWSER_MCP_UPDATE_MAN=1 cargo test --test it man_pages` and commit it."
        );
    }
}
