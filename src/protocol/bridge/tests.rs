//! The bridge protocol's messages on the wire, both ways.

use super::*;
use crate::protocol::input::{code, InputDone, InputError};
use serde_json::{json, Value};

#[test]
fn decodes_every_seed_message() {
    let d = decode(r#"{"type":"connected","sessionId":"s1","browser":{"name":"Chrome","version":"120"},"tabs":[{"id":1,"title":"Example","url":"https://example.com","tools":[]}]}"#).unwrap();
    assert_eq!(d.session_id.as_deref(), Some("s1"));
    match d.message {
        ExtensionMessage::Connected {
            browser,
            tabs,
            features,
        } => {
            assert!(features.is_empty(), "seed 001 names none");
            assert_eq!(browser.name, "Chrome");
            assert_eq!(tabs[0].id, 1);
            assert_eq!(tabs[0].tools.as_ref().unwrap().len(), 0);
        }
        other => panic!("{other:?}"),
    }
    let d = decode(r#"{"type":"toolResult","callId":"call_1","result":{"data":"x"},"error":null}"#)
        .unwrap();
    match d.message {
        ExtensionMessage::ToolResult { call_id, outcome } => {
            assert_eq!(call_id.as_deref(), Some("call_1"));
            assert_eq!(outcome.unwrap().get(), r#"{"data":"x"}"#);
        }
        other => panic!("{other:?}"),
    }
    let d = decode(
        r#"{"type":"toolResult","callId":7,"result":null,"error":"Tool execution failed: reason"}"#,
    )
    .unwrap();
    match d.message {
        ExtensionMessage::ToolResult { call_id, outcome } => {
            assert_eq!(call_id.as_deref(), Some("7"));
            assert_eq!(
                outcome.unwrap_err().message,
                "Tool execution failed: reason"
            );
        }
        other => panic!("{other:?}"),
    }
    let d = decode(
        r#"{"type":"toolResult","callId":"c","error":{"code":"ELEMENT_NOT_FOUND","message":"no"}}"#,
    )
    .unwrap();
    match d.message {
        ExtensionMessage::ToolResult { outcome, .. } => {
            assert_eq!(
                outcome.unwrap_err().code.as_deref(),
                Some("ELEMENT_NOT_FOUND")
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        decode(r#"{"type":"ping"}"#).unwrap().message,
        ExtensionMessage::Ping
    ));
    match decode(r#"{"type":"error","requestId":"open_3","error":{"code":"INVALID_ARGUMENTS","message":"bad url"}}"#).unwrap().message {
        ExtensionMessage::Error { request_id, failure } => {
            assert_eq!(request_id.as_deref(), Some("open_3"));
            assert_eq!(failure.code.as_deref(), Some("INVALID_ARGUMENTS"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        decode(r#"{"type":"tabClosed","tabId":2}"#).unwrap().message,
        ExtensionMessage::TabClosed { tab_id: 2 }
    ));
    assert!(matches!(
        decode(r#"{"type":"wat","x":1}"#).unwrap().message,
        ExtensionMessage::Unknown { .. }
    ));
}

#[test]
fn hidden_tools_ride_along_and_a_malformed_hint_costs_nothing() {
    let reason = "this site (http://127.0.0.1:8000) is turned off in the browser-mcp extension";
    let d = decode(
        &json!({"type": "toolsChanged", "tabId": 7, "tools": [],
        "hidden": {"tools": ["browser_snapshot", 3, "search"], "reason": reason}})
        .to_string(),
    )
    .unwrap();
    match d.message {
        ExtensionMessage::ToolsChanged {
            tab_id,
            tools,
            hidden,
        } => {
            assert_eq!((tab_id, tools.len()), (7, 0));
            let hidden = hidden.unwrap();
            assert_eq!(hidden.tools, ["browser_snapshot", "search"]);
            assert_eq!(hidden.reason, reason);
            assert!(hidden.names("search") && !hidden.names("browser_click"));
        }
        other => panic!("{other:?}"),
    }
    let d = decode(r#"{"type":"connected","tabs":[{"id":1,"tools":[],"hidden":{"tools":["browser_evaluate"],"reason":"off"}},{"id":2,"tools":[]}]}"#).unwrap();
    match d.message {
        ExtensionMessage::Connected { tabs, .. } => {
            assert_eq!(tabs[0].hidden.as_ref().unwrap().tools, ["browser_evaluate"]);
            assert!(tabs[1].hidden.is_none(), "absent: nothing hidden");
        }
        other => panic!("{other:?}"),
    }
    // Wrong shapes are dropped, and the message they came with still decodes.
    for bad in [
        json!("browser_snapshot"),
        json!(["browser_snapshot"]),
        json!({"tools": "browser_snapshot", "reason": "x"}),
        json!({"tools": [], "reason": "x"}),
        json!({"tools": [1, null]}),
        json!(null),
    ] {
        let text = json!({"type": "tabUpdated", "tab": {"id": 3, "tools": [], "hidden": bad}});
        match decode(&text.to_string()).unwrap().message {
            ExtensionMessage::TabUpdated { tab } => assert!(tab.hidden.is_none(), "{bad}"),
            other => panic!("{other:?}"),
        }
        let text = json!({"type": "tabFocused", "tabId": 3, "hidden": bad});
        match decode(&text.to_string()).unwrap().message {
            ExtensionMessage::TabFocused { hidden, .. } => assert!(hidden.is_none(), "{bad}"),
            other => panic!("{other:?}"),
        }
    }
    // A missing reason is filled in rather than losing the list.
    let d = decode(
        r#"{"type":"toolsChanged","tabId":1,"tools":[],"hidden":{"tools":["a"],"reason":7}}"#,
    )
    .unwrap();
    match d.message {
        ExtensionMessage::ToolsChanged { hidden, .. } => {
            assert_eq!(hidden.unwrap().reason, "the extension does not say why")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn page_events_keep_their_data_raw() {
    let d = decode(
        r#"{"type":"tabEvent","sessionId":"s","tabId":7,"event":"consoleError","data":{"id":3,"text":"Uncaught boom"}}"#,
    )
    .unwrap();
    match d.message {
        ExtensionMessage::TabEvent {
            tab_id,
            event,
            data,
        } => {
            assert_eq!((tab_id, event.as_str()), (7, "consoleError"));
            assert_eq!(data.get(), r#"{"id":3,"text":"Uncaught boom"}"#);
        }
        other => panic!("{other:?}"),
    }
    match decode(r#"{"type":"tabEvent","tabId":1,"event":"navigated"}"#)
        .unwrap()
        .message
    {
        ExtensionMessage::TabEvent { data, .. } => assert_eq!(data.get(), "{}"),
        other => panic!("{other:?}"),
    }
    assert!(decode(r#"{"type":"tabEvent","tabId":1,"event":7}"#).is_err());
    assert!(decode(r#"{"type":"tabEvent","event":"navigated"}"#).is_err());
    // Another message's `event` or `data` of any shape costs it nothing.
    let d = decode(r#"{"type":"tabClosed","tabId":2,"event":{"x":1},"data":[1]}"#).unwrap();
    assert!(matches!(
        d.message,
        ExtensionMessage::TabClosed { tab_id: 2 }
    ));
}

#[test]
fn rejects_wrong_types_and_missing_fields() {
    assert!(decode(r#"{"type":"tabClosed","tabId":"two"}"#).is_err());
    assert!(decode(r#"{"type":"tabClosed"}"#).is_err());
    assert!(decode(r#"{"tabId":1}"#).is_err());
    assert!(decode("not json").is_err());
    assert!(decode("[]").is_err());
}

#[test]
fn tab_groups_are_additive() {
    let open = |group| {
        let m = ServerMessage::OpenTab {
            session_id: "s",
            url: "https://example.com/",
            focus: false,
            request_id: "open_1",
            group,
        };
        serde_json::from_str::<Value>(&m.to_json()).unwrap()
    };
    // Without a group, seed 001's openTab exactly.
    assert_eq!(
        open(None),
        json!({"type":"openTab","sessionId":"s","url":"https://example.com/","focus":false,"requestId":"open_1"})
    );
    let group = TabGroup {
        title: "claude-code".into(),
    };
    assert_eq!(open(Some(&group))["group"], json!({"title": "claude-code"}));
    let end = |answer| ServerMessage::EndHandoff {
        session_id: "s",
        tab_id: 7,
        answer,
    };
    assert_eq!(
        serde_json::from_str::<Value>(&end(None).to_json()).unwrap(),
        json!({"type": "endHandoff", "sessionId": "s", "tabId": 7})
    );
    assert_eq!(
        serde_json::from_str::<Value>(&end(Some("done")).to_json()).unwrap(),
        json!({"type": "endHandoff", "sessionId": "s", "tabId": 7, "answer": "done"})
    );
    let m = ServerMessage::GroupTabs {
        session_id: "s",
        tab_ids: &[7, 9],
        group: &group,
    };
    assert_eq!(
        serde_json::from_str::<Value>(&m.to_json()).unwrap(),
        json!({"type":"groupTabs","sessionId":"s","tabIds":[7,9],"group":{"title":"claude-code"}})
    );
}

#[test]
fn watch_is_additive_and_answered_by_request_id() {
    let m = ServerMessage::Watch {
        session_id: "s",
        request_id: "watch_3",
        watching: true,
    };
    assert_eq!(
        serde_json::from_str::<Value>(&m.to_json()).unwrap(),
        json!({"type":"watch","sessionId":"s","requestId":"watch_3","watching":true})
    );
    let d = decode(r#"{"type":"watching","sessionId":"s","requestId":"watch_3","watching":true}"#)
        .unwrap();
    match d.message {
        ExtensionMessage::Watching { request_id } => {
            assert_eq!(request_id.as_deref(), Some("watch_3"))
        }
        other => panic!("{other:?}"),
    }
    let d = decode(r#"{"type":"connected","browser":{"name":"Chromium","version":"156"},"tabs":[],"features":["watch","later"]}"#).unwrap();
    match d.message {
        ExtensionMessage::Connected { features, .. } => {
            assert_eq!(features, [WATCH, "later"])
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn encodes_with_seed_field_names() {
    let args = RawValue::from_string(r#"{"query":"test"}"#.into()).unwrap();
    let m = ServerMessage::CallTool {
        session_id: "s",
        call_id: "call_1",
        tab_id: 123,
        tool_name: "search",
        args: &args,
        agent: None,
    };
    let v: Value = serde_json::from_str(&m.to_json()).unwrap();
    assert_eq!(
        v,
        json!({"type":"callTool","sessionId":"s","callId":"call_1","tabId":123,"toolName":"search","args":{"query":"test"}})
    );
    let named = ServerMessage::CallTool {
        session_id: "s",
        call_id: "call_1",
        tab_id: 123,
        tool_name: "search",
        args: &args,
        agent: Some("claude-code"),
    };
    let v: Value = serde_json::from_str(&named.to_json()).unwrap();
    assert_eq!(v["agent"], "claude-code", "additive: {v}");
    let v: Value = serde_json::from_str(&ServerMessage::Pong.to_json()).unwrap();
    assert_eq!(v, json!({"type":"pong"}));
}

/// Issue 57's additive pair: `input` decoded, `inputDone` written.
#[test]
fn input_and_its_answer() {
    let d = decode(r#"{"type":"input","sessionId":"s","requestId":"input_7","tabId":12,"actions":[{"type":"key","id":"k","actions":[]}],"probe":"n0nce"}"#).unwrap();
    match d.message {
        ExtensionMessage::Input(r) => {
            assert_eq!((r.request_id.as_str(), r.tab_id), ("input_7", 12));
            assert_eq!(r.actions.get(), r#"[{"type":"key","id":"k","actions":[]}]"#);
            assert_eq!(r.probe.as_deref(), Some("n0nce"));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        decode(r#"{"type":"input","requestId":"i","actions":[]}"#).is_err(),
        "no tabId"
    );
    assert!(
        decode(r#"{"type":"input","tabId":1,"actions":[]}"#).is_err(),
        "no requestId"
    );
    let done = InputDone {
        session_id: "s",
        request_id: "input_7",
        error: None,
    };
    assert_eq!(
        serde_json::from_str::<Value>(&done.to_json()).unwrap(),
        json!({"type":"inputDone","sessionId":"s","requestId":"input_7"})
    );
    let failed = InputDone {
        error: Some(InputError {
            code: code::UNKNOWN_TAB.into(),
            message: "probe".into(),
        }),
        ..done
    };
    assert_eq!(
        serde_json::from_str::<Value>(&failed.to_json()).unwrap()["error"]["code"],
        "UNKNOWN_TAB"
    );
}
