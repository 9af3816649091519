//! Routing one request: the `Origin` and `Host` checks that come first, then the route by path
//! and method (the MCP endpoint, `/mrtr/forward`, health, readiness, metrics, the OAuth metadata
//! and discovery documents, 404), and the health and readiness answers.

use std::sync::Arc;

use http::{header, HeaderMap, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::Value;

use super::responses::{json_response, method_not_allowed, metrics_response, text_response};
use super::serve::Front;
use super::{ResponseBody, HEALTH_PATH, METRICS_PATH, READY_PATH};
use crate::front::callers::Caller;
use crate::front::validate::error_response;
use crate::jsonrpc::{codes, ErrorObject};
use crate::legacy_session::LegacySessions;
use crate::limits;

impl Front {
    pub(super) async fn route(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        if let Err(origin) = self.check_origin(request.headers()) {
            crate::metrics::global().rejection("origin");
            tracing::warn!(origin = %origin.escape_debug(), "refused a request from a foreign origin");
            return json_response(
                StatusCode::FORBIDDEN,
                &error_response(
                    None,
                    &ErrorObject::new(codes::INVALID_REQUEST, "origin not allowed"),
                ),
            );
        }
        let host = request
            .headers()
            .get(header::HOST)
            .map(|value| String::from_utf8_lossy(value.as_bytes()));
        if !limits::host_allowed(
            host.as_deref(),
            self.config.listen,
            &self.config.allowed_hosts,
        ) {
            crate::metrics::global().rejection("host");
            tracing::warn!(host = %host.unwrap_or_default().escape_debug(), "refused a request for a foreign Host (DNS rebinding?)");
            return json_response(
                StatusCode::FORBIDDEN,
                &error_response(
                    None,
                    &ErrorObject::new(codes::INVALID_REQUEST, "host not allowed"),
                ),
            );
        }
        let path = request.uri().path();
        if path == self.config.path {
            let caller = match self.callers.identify(request.headers()).await {
                Ok(caller) => caller,
                Err(refused) => return refused,
            };
            if let Some(legacy) = self.legacy_session_route(&request) {
                return crate::front::http_legacy::session_route(
                    legacy,
                    request,
                    self.config.sse_keep_alive,
                    self.callers(caller),
                )
                .await;
            }
            if request.method() == Method::POST {
                self.post(request, caller).await
            } else {
                method_not_allowed("POST")
            }
        } else if path == crate::cluster::FORWARD_PATH {
            if request.method() == Method::POST {
                self.forwarded(request).await
            } else {
                method_not_allowed("POST")
            }
        } else if path == HEALTH_PATH || path == READY_PATH || path == METRICS_PATH {
            if request.method() != Method::GET && request.method() != Method::HEAD {
                method_not_allowed("GET, HEAD")
            } else if path == HEALTH_PATH {
                self.health()
            } else if path == READY_PATH {
                self.ready()
            } else {
                metrics_response()
            }
        } else if let Some(server) = self
            .config
            .resource_server
            .as_ref()
            .filter(|server| server.serves(path))
        {
            if request.method() != Method::GET && request.method() != Method::HEAD {
                return method_not_allowed("GET, HEAD");
            }
            server.metadata_response()
        } else if let Some(discovery) = self
            .config
            .discovery
            .as_ref()
            .filter(|_| crate::front::well_known::is_discovery_path(path))
        {
            if request.method() != Method::GET && request.method() != Method::HEAD {
                return method_not_allowed("GET, HEAD");
            }
            let target = request
                .uri()
                .path_and_query()
                .map_or(path, |target| target.as_str());
            discovery.relay(request.method(), target).await
        } else {
            text_response(StatusCode::NOT_FOUND, "not found\n")
        }
    }

    /// The legacy sessions, when `request` is a GET or DELETE of a legacy session (one with an
    /// `Mcp-Session-Id`) and legacy clients are served.
    fn legacy_session_route(&self, request: &Request<Incoming>) -> Option<&Arc<LegacySessions>> {
        let legacy = self
            .config
            .legacy
            .as_ref()
            .filter(|legacy| legacy.policy().serves_legacy())?;
        let session_scoped = request.method() == Method::GET || request.method() == Method::DELETE;
        (session_scoped
            && request
                .headers()
                .contains_key(crate::legacy_session::SESSION_HEADER))
        .then_some(legacy)
    }

    pub(super) fn callers(&self, caller: Caller) -> crate::front::http_legacy::Callers<'_> {
        crate::front::http_legacy::Callers {
            caller,
            rewrite: self.config.origin_rewrite.as_ref(),
        }
    }

    /// DNS-rebinding protection: every `Origin` value present must be loopback or allowed.
    fn check_origin(&self, headers: &HeaderMap) -> Result<(), String> {
        for value in headers.get_all(header::ORIGIN) {
            let origin = value
                .to_str()
                .map_err(|_| String::from_utf8_lossy(value.as_bytes()).into_owned())?
                .trim();
            if !origin_allowed(origin, &self.config.allowed_origins) {
                return Err(origin.to_owned());
            }
        }
        Ok(())
    }

    fn health(&self) -> Response<ResponseBody> {
        if self.handler.is_ready() {
            text_response(StatusCode::OK, "ok\n")
        } else {
            text_response(StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
        }
    }

    fn ready(&self) -> Response<ResponseBody> {
        let checks = self.handler.readiness();
        let failed: Vec<&str> = checks
            .iter()
            .filter(|(_, passed)| !passed)
            .map(|(name, _)| *name)
            .collect();
        let body = serde_json::json!({
            "ready": failed.is_empty(),
            "checks": checks.iter().map(|(name, passed)| ((*name).to_owned(), Value::Bool(*passed))).collect::<serde_json::Map<_, _>>(),
            "failed": failed,
        });
        let status = if failed.is_empty() {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        json_response(status, &body)
    }
}

/// Whether an `Origin` value may talk to the front: loopback hosts on any port, or a configured
/// origin or host.
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed
        .iter()
        .any(|entry| entry == "*" || entry.eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let Some(host) = origin_host(origin) else {
        return false;
    };
    matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
        || allowed
            .iter()
            .any(|entry| entry.eq_ignore_ascii_case(&host))
}

/// The lowercase host of `scheme://host[:port]` (IPv6 keeps its brackets).
fn origin_host(origin: &str) -> Option<String> {
    let (_scheme, rest) = origin.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = if authority.starts_with('[') {
        &authority[..=authority.find(']')?]
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}
