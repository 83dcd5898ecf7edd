//! `clientType=agent`: a consumer of tools, not in the registry. It lists the tools of every
//! browser in its session (any dialect) and calls them through [`calls::call`], so
//! validation, timeouts, retries and typed errors are the same as for browserctl. Each call
//! runs in its own task and answers when done, so a slow tool never blocks `ping` or other
//! calls. Agents are authenticated before the upgrade (see [`super::check_request`]) and
//! limited in calls per second and calls in flight. Each is an agent's lane (issue 60): it may
//! read an MCP agent's tab, not act in it.

use super::role::{invalid_params, Method, Reply, Role};
use crate::daemon::calls;
use crate::daemon::conn::Request;
use crate::daemon::context::Daemon;
use crate::daemon::dialect::driver::Link;
use crate::daemon::limits::{self, Slot};
use crate::daemon::registry::LaneId;
use crate::daemon::trust::via::Via;
use crate::error::{Error, ErrorCode};
use crate::protocol::control::{CallRequest, ToolView};
use crate::protocol::jsonrpc::{
    self as rpc, method, CallParams, ConnectParams, JoinParams, RpcError,
};
use futures_util::FutureExt;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

/// The longest `timeout` an agent may ask for.
const MAX_TIMEOUT_MS: f64 = 3_600_000.0;

pub struct Agent {
    in_flight: Arc<AtomicU64>,
    bucket: TokenBucket,
    lane: LaneId,
}

impl Agent {
    pub fn new(link: &Link, params: &ConnectParams) -> Agent {
        tracing::info!(conn = link.id(), session = %params.session_id, "agent connected (JSON-RPC)");
        let lane = link.d.registry.begin_lane();
        let name = format!("JSON-RPC agent {}", params.session_id);
        link.d.registry.name_lane(lane, &name);
        Agent {
            in_flight: Arc::new(AtomicU64::new(0)),
            bucket: TokenBucket::new(link.d.config().agent_rate_limit),
            lane,
        }
    }

    fn session_join(
        &mut self,
        link: &Link,
        params: &mut ConnectParams,
        p: Option<Value>,
    ) -> Result<Value, RpcError> {
        let p: JoinParams = rpc::params(p).map_err(invalid_params)?;
        if !rpc::valid_session_id(&p.session_id) {
            return Err(invalid_params(format!(
                "malformed sessionId `{}`: use 1-128 letters, digits or -_.:@",
                p.session_id
            )));
        }
        params.session_id = p.session_id;
        let (browsers, tools) = link.d.registry.session(&params.session_id);
        let browsers: Vec<String> = browsers.iter().map(ToString::to_string).collect();
        Ok(json!({"sessionId": params.session_id, "browsers": browsers, "tools": tools.len()}))
    }

    fn tools_call(&mut self, link: &Link, session: &str, id: &Value, p: Option<Value>) -> Reply {
        let refuse = |e: RpcError| Reply::Now(rpc::error(id, &e));
        let p: CallParams = match rpc::params(p) {
            Ok(p) => p,
            Err(m) => return refuse(invalid_params(m)),
        };
        if p.arguments
            .as_ref()
            .is_some_and(|a| !a.get().trim_start().starts_with('{'))
        {
            return refuse(invalid_params("`arguments` must be an object".into()));
        }
        let timeout_ms = match p.timeout {
            None => None,
            Some(t) if t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_MS => Some(t.ceil() as u64),
            Some(t) => {
                return refuse(invalid_params(format!(
                    "`timeout` must be a number of milliseconds between 1 and {MAX_TIMEOUT_MS}, not {t}"
                )))
            }
        };
        let c = link.d.config();
        let limited = |e: Error| {
            limits::refused(&link.d.stats, link.id(), &e);
            refuse(RpcError::from_error(&e))
        };
        let max = c.agent_max_in_flight;
        let Ok(slot) = Slot::take(&self.in_flight, max) else {
            return limited(limits::exceeded(
                "agent-max-in-flight",
                max,
                format!("this agent already has {max} calls in flight; wait for one to finish"),
            ));
        };
        if !self.bucket.take(Instant::now()) {
            let rate = c.agent_rate_limit;
            return limited(limits::exceeded(
                "agent-rate-limit",
                rate,
                format!("this agent is over its rate limit of {rate} calls per second; slow down"),
            ));
        }
        let d = link.d.clone();
        let session = session.to_owned();
        let id = id.clone();
        let lane = self.lane;
        Reply::Later(
            async move {
                let _slot = slot;
                match agent_call(&d, (&session, lane), p, timeout_ms).await {
                    Ok(result) => rpc::result(&id, &result),
                    Err(e) => rpc::error(&id, &RpcError::from_error(&e)),
                }
            }
            .boxed(),
        )
    }
}

impl Role for Agent {
    fn method(&mut self, link: &mut Link, m: Method<'_>) -> Option<Reply> {
        let session = &m.conn.session_id;
        let answer = match m.name {
            method::SESSION_JOIN => self.session_join(link, m.conn, m.params),
            method::TOOLS_LIST => {
                let (_, views) = link.d.registry.session(session);
                let tools: Vec<ListedTool> = views.iter().map(ListedTool::from).collect();
                Ok(json!({"tools": tools}))
            }
            method::TOOLS_CALL => return Some(self.tools_call(link, session, m.id, m.params)),
            _ => return None,
        };
        Some(Reply::Now(match answer {
            Ok(v) => rpc::result_value(m.id, &v),
            Err(e) => rpc::error(m.id, &e),
        }))
    }

    fn response(&mut self, link: &mut Link, _id: Value, _outcome: Result<Box<RawValue>, RpcError>) {
        tracing::debug!(conn = link.id(), "an agent sent a response; ignored");
    }

    fn request(&mut self, _link: &mut Link, req: Request) {
        req.refuse(Error::internal("an agent connection runs no tools"));
    }

    fn finish(&mut self, link: &mut Link, reason: &str) {
        link.d.registry.end_lane(self.lane);
        tracing::info!(conn = link.id(), reason, "agent disconnected");
    }
}

/// An agent's `tools/call`, through the daemon's call path, to a browser of its session.
async fn agent_call(
    d: &Daemon,
    (session, lane): (&str, LaneId),
    p: CallParams,
    timeout_ms: Option<u64>,
) -> Result<Box<RawValue>, Error> {
    let mut req = CallRequest {
        tool: p.name,
        tab: p.target,
        args: p.arguments,
        timeout_ms,
        agent: Some(format!("JSON-RPC agent {session}")),
        ..CallRequest::default()
    };
    let target = d
        .registry
        .resolve_in_session(session, &req)
        .map_err(|e| e.hint(ErrorCode::AmbiguousTarget, "pass one of them as `target`"))?;
    // The call goes to the target resolved in the session, not to what the reference would
    // name outside it.
    req.tab = Some(target.to_string());
    // The loopback port takes this machine's programs alone.
    Ok(calls::call_as(d, req, Some(lane), Via::Local).await?.result)
}

/// A tool as `tools/list` shows it to an agent: the MCP tool, plus where it lives (`target`,
/// to pass back in `tools/call` when several browsers or tabs offer the same name).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListedTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a Value>,
    target: &'a str,
    browser: &'a str,
}

impl<'a> From<&'a ToolView> for ListedTool<'a> {
    fn from(v: &'a ToolView) -> ListedTool<'a> {
        ListedTool {
            name: &v.name,
            title: v.title.as_deref(),
            description: v.description.as_deref(),
            input_schema: &v.input_schema,
            output_schema: v.output_schema.as_deref(),
            annotations: v.annotations.as_ref(),
            target: &v.tab,
            browser: &v.browser,
        }
    }
}

/// Calls per second with bursts up to the rate (at least one); a rate of 0 is no limit.
///
/// Hand-written on purpose: twenty lines with a test, where a rate-limiting crate would bring
/// keyed limiters, its own clock and several dependencies for one unkeyed bucket per agent.
struct TokenBucket {
    rate: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    fn new(rate: f64) -> TokenBucket {
        TokenBucket {
            rate,
            tokens: rate.max(1.0),
            last: Instant::now(),
        }
    }

    fn take(&mut self, now: Instant) -> bool {
        if self.rate <= 0.0 || !self.rate.is_finite() {
            return true;
        }
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.rate.max(1.0));
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn bucket_allows_a_burst_then_refills() {
        let start = Instant::now();
        let mut b = TokenBucket::new(3.0);
        b.last = start;
        assert!(b.take(start) && b.take(start) && b.take(start));
        assert!(!b.take(start));
        assert!(b.take(start + Duration::from_millis(400)));
        assert!(!b.take(start + Duration::from_millis(400)));
        let mut free = TokenBucket::new(0.0);
        assert!((0..1000).all(|_| free.take(start)));
    }
}
