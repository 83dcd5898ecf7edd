//! `browserctl pair` (issue 59): with the daemon's port outside the ports the extension scans
//! (8765–8785 unless its settings say otherwise), the browser never found the daemon to pair
//! with, and the code waited in vain with no word why.

use crate::support::common::*;

#[test]
fn pair_says_when_the_daemons_port_is_outside_the_extensions_scan() {
    let d = TestDaemon::start();
    assert!(!(8765..=8785).contains(&d.port), "port {}", d.port);
    let out = d.ctl(&["pair", "--no-wait"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains(&format!("port {}", d.port))
            && said.contains("8765–8785")
            && said.contains("Ports to scan"),
        "{said}"
    );
}
