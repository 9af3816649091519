//! The proxy as the OAuth resource server (`--require-auth`), for a legacy server without auth
//! of its own (a stdio server put online): every request to the MCP endpoint needs a bearer
//! token the proxy verifies (`--principal jwt`); one without gets `401` with
//! `WWW-Authenticate: Bearer resource_metadata="<public origin>/.well-known/oauth-protected-
//! resource<path>"`, and the proxy serves that RFC 9728 document itself, at
//! `/.well-known/oauth-protected-resource` with and without the endpoint's path suffix:
//! `resource` (the public URL), `authorization_servers` (`--authorization-server`),
//! `bearer_methods_supported` (`header`), and `scopes_supported` (`--scope`, when given: a
//! token must then carry every one of them, else `403 insufficient_scope`).

use http::header::{CACHE_CONTROL, WWW_AUTHENTICATE};
use http::{HeaderValue, Response, StatusCode};
use serde_json::{json, Value};

use super::http::{json_response, ResponseBody};
use super::validate::error_response;
use crate::credentials::UNAUTHORIZED;
use crate::jsonrpc::ErrorObject;

/// The RFC 9728 well-known prefix.
const METADATA_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// What the proxy says about itself as a resource server.
#[derive(Debug, Clone)]
pub struct ResourceServer {
    /// The URL clients reach the MCP endpoint at (`--public-url`, else the listening address).
    resource: String,
    /// `<origin>/.well-known/oauth-protected-resource<path>`.
    metadata_url: String,
    /// The endpoint's path, as the metadata path's suffix (`/mcp`; empty for `/`).
    suffix: String,
    authorization_servers: Vec<String>,
    scopes: Vec<String>,
}

impl ResourceServer {
    /// For the endpoint at `resource` (an absolute http(s) URL).
    pub fn new(
        resource: &str,
        authorization_servers: Vec<String>,
        scopes: Vec<String>,
    ) -> Result<Self, String> {
        let url = url::Url::parse(resource)
            .map_err(|error| format!("the public URL `{resource}` is not a URL: {error}"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(format!(
                "the public URL `{resource}` is not an http(s) URL with a host"
            ));
        }
        if authorization_servers.is_empty() {
            return Err("--require-auth needs --authorization-server URL (the issuer clients get their tokens from)".into());
        }
        let suffix = url.path().trim_end_matches('/').to_owned();
        let origin = url.origin().ascii_serialization();
        Ok(ResourceServer {
            resource: resource.to_owned(),
            metadata_url: format!("{origin}{METADATA_PREFIX}{suffix}"),
            suffix,
            authorization_servers,
            scopes,
        })
    }

    /// Whether `path` is this server's metadata document (with or without the suffix).
    pub(crate) fn serves(&self, path: &str) -> bool {
        path.strip_prefix(METADATA_PREFIX)
            .is_some_and(|rest| rest.is_empty() || rest == self.suffix)
    }

    /// The RFC 9728 document.
    pub fn metadata(&self) -> Value {
        let mut metadata = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes.is_empty() {
            metadata["scopes_supported"] = json!(self.scopes);
        }
        metadata
    }

    pub(crate) fn metadata_response(&self) -> Response<ResponseBody> {
        let mut response = json_response(StatusCode::OK, &self.metadata());
        response
            .headers_mut()
            .insert(CACHE_CONTROL, HeaderValue::from_static("max-age=3600"));
        response
    }

    /// The scopes a token must carry (`--scope`).
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The `WWW-Authenticate` value: `Bearer` with `error`/`error_description` when given,
    /// `scope` when scopes are configured, and `resource_metadata`.
    pub fn challenge(&self, error: Option<(&str, &str)>) -> String {
        let mut parts = Vec::new();
        if let Some((error, description)) = error {
            parts.push(format!(r#"error="{error}""#));
            parts.push(format!(r#"error_description="{description}""#));
        }
        if !self.scopes.is_empty() {
            parts.push(format!(r#"scope="{}""#, self.scopes.join(" ")));
        }
        parts.push(format!(r#"resource_metadata="{}""#, self.metadata_url));
        format!("Bearer {}", parts.join(", "))
    }

    /// `401` for a request without a token.
    pub(crate) fn unauthorized(&self) -> Response<ResponseBody> {
        crate::metrics::global().rejection("no_token");
        refusal(
            StatusCode::UNAUTHORIZED,
            "Unauthorized: this server needs a bearer token (see WWW-Authenticate)",
            &self.challenge(None),
        )
    }

    /// `403 insufficient_scope` for a token without every `--scope`.
    pub(crate) fn insufficient_scope(&self) -> Response<ResponseBody> {
        crate::metrics::global().rejection("insufficient_scope");
        let why = "the token lacks a required scope";
        refusal(
            StatusCode::FORBIDDEN,
            &format!("Forbidden: insufficient_scope: {why}"),
            &self.challenge(Some(("insufficient_scope", why))),
        )
    }
}

/// A JSON-RPC error with `status` and the challenge.
pub(crate) fn refusal(
    status: StatusCode,
    message: &str,
    challenge: &str,
) -> Response<ResponseBody> {
    let mut response = json_response(
        status,
        &error_response(None, &ErrorObject::new(UNAUTHORIZED, message.to_owned())),
    );
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_paths_challenges_and_document() {
        let server = ResourceServer::new(
            "https://mcp.example.com/mcp",
            vec!["https://auth.example.com".into()],
            vec!["mcp:tools".into()],
        )
        .unwrap();
        assert!(server.serves("/.well-known/oauth-protected-resource"));
        assert!(server.serves("/.well-known/oauth-protected-resource/mcp"));
        assert!(!server.serves("/.well-known/oauth-protected-resource/other"));
        assert!(!server.serves("/.well-known/oauth-authorization-server"));
        assert_eq!(
            server.challenge(None),
            r#"Bearer scope="mcp:tools", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#
        );
        assert_eq!(
            server.metadata(),
            json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://auth.example.com"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["mcp:tools"],
            })
        );
        let root = ResourceServer::new("http://127.0.0.1:8787/", vec!["https://a".into()], vec![])
            .unwrap();
        assert!(root.serves("/.well-known/oauth-protected-resource"));
        assert!(root.challenge(None).ends_with(
            r#"resource_metadata="http://127.0.0.1:8787/.well-known/oauth-protected-resource""#
        ));
        assert!(ResourceServer::new("https://x/mcp", vec![], vec![]).is_err());
        assert!(ResourceServer::new("not a url", vec!["https://a".into()], vec![]).is_err());
    }
}
