//! The `Mcp-Param-*` check of a `tools/call` over Streamable HTTP: the glue between the
//! request, the legacy tools' `x-mcp-header` annotations (learnt from the legacy `tools/list`,
//! kept per capability profile in a [`crate::param_headers::ToolHeaderIndex`]) and the pure check
//! in [`crate::param_headers`].

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tracing::{debug, warn};

use super::wire::{backend_failure, flatten, internal};
use super::Engine;
use crate::backend::{BackendError, LanePool};
use crate::capabilities::CapabilityProfile;
use crate::jsonrpc::{codes, ErrorObject};
use crate::param_headers::ToolHeaders;
use crate::request::FrontRequest;

/// A `Mcp-Param-*` mismatch is checked again against a fresh legacy `tools/list` when what the
/// proxy knows is older than this (the legacy server may have changed a tool without saying so;
/// a client that sees the mismatch lists the tools again and retries).
const TOOL_HEADERS_RECHECK_AFTER: Duration = Duration::from_secs(2);
/// The most `tools/list` pages read to learn the tools' annotations.
const TOOL_LIST_MAX_PAGES: usize = 100;

impl Engine {
    /// The `Mcp-Param-*` check of a `tools/call` over Streamable HTTP ([`crate::param_headers`]):
    /// `-32020` when the headers disagree with `arguments`. Decided before anything reaches the
    /// legacy server or the response starts.
    pub(super) async fn check_param_headers(
        &self,
        request: &FrontRequest,
        profile: &CapabilityProfile,
    ) -> Result<(), ErrorObject> {
        let Some(headers) = request.param_headers.as_ref() else {
            return Ok(());
        };
        let Some(name) = request.params.get("name").and_then(Value::as_str) else {
            return Ok(());
        };
        // `arguments` are read (a `Value` tree of the raw params built) only for an annotated
        // tool.
        let verdict = |known: &ToolHeaders| {
            known.tools.get(name).map_or(Ok(()), |params| {
                crate::param_headers::check(params, request.params.get("arguments"), headers)
            })
        };
        let pool = self.pool_for(request)?;
        // Per call: decided under the index's read lock when the tools are known and current.
        let generation = pool.tools_generation();
        let decided = self
            .tool_headers
            .with_current(profile, generation, |known| (verdict(known), known.loaded));
        let (mut outcome, loaded) = match decided {
            Some(decided) => decided,
            None => {
                let known = Box::pin(self.tool_headers(&pool, profile, None)).await?;
                (verdict(&known), known.loaded)
            }
        };
        if outcome.is_err() && loaded.elapsed() >= TOOL_HEADERS_RECHECK_AFTER {
            let fresh = Box::pin(self.tool_headers(&pool, profile, Some(loaded))).await?;
            outcome = verdict(&fresh);
        }
        outcome.map_err(|problem| {
            crate::metrics::global().rejection("header_mismatch");
            debug!(tool = name, %problem, "refused a tools/call: Mcp-Param header mismatch");
            ErrorObject::new(
                codes::HEADER_MISMATCH,
                format!("Header mismatch: {problem}"),
            )
        })
    }

    /// What the legacy `tools/list` says of the tools' annotations for `profile`: known and
    /// current, or fetched now (one fetch at a time; a list change makes it stale).
    /// `newer_than`: refetch unless what is known was loaded after that instant.
    async fn tool_headers(
        &self,
        pool: &LanePool,
        profile: &CapabilityProfile,
        newer_than: Option<std::time::Instant>,
    ) -> Result<Arc<ToolHeaders>, ErrorObject> {
        let fresh_enough = |known: &ToolHeaders| newer_than.is_none_or(|at| known.loaded > at);
        let generation = pool.tools_generation();
        if let Some(known) = self.tool_headers.current(profile, generation) {
            if fresh_enough(&known) {
                return Ok(known);
            }
        }
        let _loading = self.tool_headers.loading.lock().await;
        // Read before the fetch: a change announced during it leaves the result stale.
        let generation = pool.tools_generation();
        if let Some(known) = self.tool_headers.current(profile, generation) {
            if fresh_enough(&known) {
                return Ok(known);
            }
        }
        let mut headers = ToolHeaders {
            generation,
            loaded: std::time::Instant::now(),
            tools: crate::FastHashMap::default(),
        };
        let lane = pool.shared(profile).await.map_err(backend_failure)?;
        let mut cursor: Option<String> = None;
        for _ in 0..TOOL_LIST_MAX_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let call = lane
                .request("tools/list", params)
                .await
                .map_err(backend_failure)?;
            let response = tokio::time::timeout(self.settings.request_timeout, call.response)
                .await
                .map_err(|_| {
                    internal(BackendError::Timeout(self.settings.request_timeout).to_string())
                })?;
            let page = match response {
                // The server lists no tools (no `tools` capability, or it failed): nothing to
                // check against; its answer to the call itself will say more.
                Ok(Ok(Err(error))) => {
                    debug!(code = error.code, message = %error.message,
                        "the legacy tools/list failed: no Mcp-Param headers are checked");
                    break;
                }
                other => flatten(other)?.into_value()?,
            };
            for (tool, reason) in headers.add_page(&page) {
                warn!(
                    tool = %tool,
                    %reason,
                    "legacy tool with invalid x-mcp-header annotations: 2026-07-28 clients drop it, \
                     and the proxy checks none of its Mcp-Param headers"
                );
            }
            cursor = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        let headers = Arc::new(headers);
        self.tool_headers.store(profile, Arc::clone(&headers));
        Ok(headers)
    }
}
