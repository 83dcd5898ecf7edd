//! The typed methods of [`Client`]: one per control-API route.

use super::events::EventFilter;
use super::transport::{encode, Client};
use crate::error::{Error, ErrorCode};
use crate::protocol::control::{
    BrowserView, Browsers, CallRequest, CallResponse, Cancelled, Closed, OpenTabRequest, Status,
    TabView, Tabs, ToolView, Tools,
};
use hyper::Method;
use serde_json::Value;
use std::time::Duration;

/// Which tools [`Client::tools`] lists; the default lists all.
///
/// ```
/// use browser_mcp::client::ToolFilter;
/// let only_b1 = ToolFilter { browser: Some("b1".into()), ..Default::default() };
/// assert_eq!(only_b1.tab, None);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolFilter {
    /// Only this tab's (`b1:12`, or `12` when unique) or browser's (`b3`) tools.
    pub tab: Option<String>,
    /// Only tools of this browser.
    pub browser: Option<String>,
    /// Only tools with this name.
    pub name: Option<String>,
}

impl ToolFilter {
    fn query(&self) -> String {
        let pairs: Vec<String> = [
            ("tab", &self.tab),
            ("browser", &self.browser),
            ("name", &self.name),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", encode(v))))
        .collect();
        if pairs.is_empty() {
            String::new()
        } else {
            format!("?{}", pairs.join("&"))
        }
    }
}

impl Client {
    /// The daemon's state and counters.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// let status = client.status().await?;
    /// println!("{} tabs, {} calls in flight", status.tabs, status.calls_in_flight);
    /// # Ok(()) }
    /// ```
    pub async fn status(&self) -> Result<Status, Error> {
        self.get("/v1/status").await
    }

    /// Connected browsers.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// for b in client.browsers().await? {
    ///     println!("{} {} {}", b.id, b.name, b.version);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn browsers(&self) -> Result<Vec<BrowserView>, Error> {
        Ok(self.get::<Browsers>("/v1/browsers").await?.browsers)
    }

    /// Open tabs, optionally of one browser only.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// for tab in client.tabs(None).await? {
    ///     println!("{} {} ({} tools)", tab.tab_ref, tab.url, tab.tools.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn tabs(&self, browser: Option<&str>) -> Result<Vec<TabView>, Error> {
        let path = match browser {
            Some(b) => format!("/v1/tabs?browser={}", encode(b)),
            None => "/v1/tabs".to_owned(),
        };
        Ok(self.get::<Tabs>(&path).await?.tabs)
    }

    /// One tab with its tools.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// let tab = client.tab("b1:12").await?;
    /// println!("{}", tab.title);
    /// # Ok(()) }
    /// ```
    pub async fn tab(&self, tab: &str) -> Result<TabView, Error> {
        self.get(&format!("/v1/tabs/{}", encode(tab))).await
    }

    /// Tools with their schemas and annotations.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// use browser_mcp::client::ToolFilter;
    /// let filter = ToolFilter { name: Some("search".into()), ..Default::default() };
    /// for t in client.tools(&filter).await? {
    ///     println!("{} on {}", t.name, t.tab);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn tools(&self, filter: &ToolFilter) -> Result<Vec<ToolView>, Error> {
        Ok(self
            .get::<Tools>(&format!("/v1/tools{}", filter.query()))
            .await?
            .tools)
    }

    /// Calls a tool with JSON arguments; the daemon picks the tab (the focused one if it has
    /// the tool, else the only one that has it).
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon with a tab offering `search`.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// let answer = client.call("search", serde_json::json!({"query": "test"})).await?;
    /// println!("{}", answer.result.get());
    /// # Ok(()) }
    /// ```
    pub async fn call(&self, tool: &str, args: Value) -> Result<CallResponse, Error> {
        let args = serde_json::value::to_raw_value(&args)
            .map_err(|e| Error::new(ErrorCode::InvalidArguments, e.to_string()))?;
        self.call_with(CallRequest {
            tool: tool.to_owned(),
            args: Some(args),
            ..Default::default()
        })
        .await
    }

    /// Calls a tool with every option: tab, timeout, retries, retry on timeout, CLI-style flags.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon with a tab offering `search`.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// use browser_mcp::protocol::control::CallRequest;
    /// let answer = client
    ///     .call_with(CallRequest {
    ///         tool: "search".into(),
    ///         tab: Some("b1:12".into()),
    ///         flags: vec![("query".into(), Some("test".into()))],
    ///         timeout_ms: Some(5_000),
    ///         retries: Some(0),
    ///         ..Default::default()
    ///     })
    ///     .await?;
    /// println!("{} attempt(s), {} ms", answer.attempts, answer.elapsed_ms);
    /// # Ok(()) }
    /// ```
    pub async fn call_with(&self, req: CallRequest) -> Result<CallResponse, Error> {
        self.json(Method::POST, "/v1/call", Some(&req)).await
    }

    /// Opens a tab and returns it once the browser reports it.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon with a connected browser.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// let tab = client.open("https://example.com", true).await?;
    /// client.close(&tab.tab_ref).await?;
    /// # Ok(()) }
    /// ```
    pub async fn open(&self, url: &str, focus: bool) -> Result<TabView, Error> {
        let req = OpenTabRequest {
            url: url.to_owned(),
            focus,
            ..Default::default()
        };
        self.json(Method::POST, "/v1/tabs", Some(&req)).await
    }

    /// Closes a tab; returns its reference once the browser reports it closed.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon with a connected browser.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// let closed = client.close("b1:12").await?;
    /// assert_eq!(closed, "b1:12");
    /// # Ok(()) }
    /// ```
    pub async fn close(&self, tab: &str) -> Result<String, Error> {
        let path = format!("/v1/tabs/{}", encode(tab));
        Ok(self
            .json::<Closed>(Method::DELETE, &path, None::<&()>)
            .await?
            .closed)
    }

    /// Cancels the call sent with this `callId` ([`CallRequest::call_id`]): it ends at once
    /// with `CANCELLED`. `false` when no such call is in flight (it ended, or not started yet).
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon with a call in flight.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// if client.cancel("job-7").await? {
    ///     println!("cancelled");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn cancel(&self, call_id: &str) -> Result<bool, Error> {
        let path = format!("/v1/calls/{}", encode(call_id));
        match self
            .json::<Cancelled>(Method::DELETE, &path, None::<&()>)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.code == ErrorCode::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Asks a tab for its tools afresh.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon with a connected browser.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// let tab = client.discover("b1:12").await?;
    /// println!("{} tools", tab.tools.len());
    /// # Ok(()) }
    /// ```
    pub async fn discover(&self, tab: &str) -> Result<TabView, Error> {
        let path = format!("/v1/tabs/{}/discover", encode(tab));
        self.json(Method::POST, &path, None::<&()>).await
    }

    /// Waits until a tool named `name` is offered (on `tab`, if given) and returns where.
    /// Fails with `MESSAGE_TIMEOUT` after `timeout`.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// use std::time::Duration;
    /// let offered = client.wait_for_tool("search", None, Duration::from_secs(30)).await?;
    /// println!("search is on {}", offered[0].tab);
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_tool(
        &self,
        name: &str,
        tab: Option<&str>,
        timeout: Duration,
    ) -> Result<Vec<ToolView>, Error> {
        let filter = ToolFilter {
            tab: tab.map(str::to_owned),
            name: Some(name.to_owned()),
            ..Default::default()
        };
        self.wait_until(timeout, &format!("tool `{name}`"), || async {
            match self.tools(&filter).await {
                Ok(list) if !list.is_empty() => Ok(Some(list)),
                Ok(_) => Ok(None),
                // The tab may simply not be there yet.
                Err(e) if matches!(e.code, ErrorCode::TabNotFound | ErrorCode::NoBrowser) => {
                    Ok(None)
                }
                Err(e) => Err(e),
            }
        })
        .await
    }

    /// Waits until a tab whose URL matches `pattern` is open (`*` matches anything; a pattern
    /// without `*` matches as a substring) and returns the matching tabs.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// use std::time::Duration;
    /// let tabs = client.wait_for_tab("https://example.com/*", Duration::from_secs(30)).await?;
    /// println!("{}", tabs[0].tab_ref);
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_tab(
        &self,
        pattern: &str,
        timeout: Duration,
    ) -> Result<Vec<TabView>, Error> {
        self.wait_until(timeout, &format!("a tab matching `{pattern}`"), || async {
            let hits: Vec<TabView> = self
                .tabs(None)
                .await?
                .into_iter()
                .filter(|t| crate::pattern::url_matches(pattern, &t.url))
                .collect();
            Ok((!hits.is_empty()).then_some(hits))
        })
        .await
    }

    /// Looks, then looks again after every event, until `look` finds something. The event
    /// stream is opened before the first look so nothing in between is missed.
    async fn wait_until<T, F, Fut>(
        &self,
        timeout: Duration,
        what: &str,
        look: F,
    ) -> Result<T, Error>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<Option<T>, Error>>,
    {
        let search = async {
            let mut events = self.events(&EventFilter::default()).await?;
            loop {
                if let Some(found) = look().await? {
                    return Ok(found);
                }
                match events.next_event().await {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(e),
                    None => {
                        return Err(Error::new(
                            ErrorCode::DaemonUnavailable,
                            "the daemon closed the event stream",
                        ))
                    }
                }
            }
        };
        tokio::time::timeout(timeout, search)
            .await
            .unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorCode::MessageTimeout,
                    format!("{what} did not appear within {} ms", timeout.as_millis()),
                ))
            })
    }
}
