//! A peer that closes gets its close frame echoed (RFC 6455 §5.5.1) in every dialect, so
//! browsers see a clean close (1000) rather than 1006.

use crate::support::common::*;
use crate::support::peers::*;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

async fn close_and_read_echo(ws: &mut Ws) -> Option<u16> {
    ws.close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "bye".into(),
    }))
    .await
    .expect("send close");
    close_code(ws).await
}

#[tokio::test(flavor = "multi_thread")]
async fn every_dialect_echoes_a_peers_close_frame() {
    let d = TestDaemon::start();
    let mut bridge =
        FakeExtension::connect(&d, "s1", vec![tab(7, "Search", vec![search_tool()])]).await;
    let mut register = RegisterPeer::connect(&d).await;
    let mut rpc = RpcPeer::browser(&d, "s3", vec![greet_tool()]).await;
    let mut agent = RpcPeer::agent(&d, "s3").await;
    for (name, ws) in [
        ("bridge", &mut bridge.ws),
        ("register", &mut register.ws),
        ("jsonrpc browser", &mut rpc.ws),
        ("jsonrpc agent", &mut agent.ws),
    ] {
        assert_eq!(
            close_and_read_echo(ws).await,
            Some(1000),
            "{name}\n{}",
            d.log()
        );
    }
}
