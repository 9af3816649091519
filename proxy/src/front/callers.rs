//! Who sends a request on the HTTP front: its [`Caller`] (the credentials sent on for it and
//! the principal that names it), per `--principal`, and the proxy's own `401` when it cannot
//! tell.
//!
//! - `--principal digest` (the default): the digest of the credentials
//!   ([`Credentials::from_request`]); nothing is refused here.
//! - `--principal jwt`: a request with `Authorization` must carry one bearer token that
//!   [`JwtVerifier`] accepts; its principal is the token's issuer and subject. Any other
//!   `Authorization` gets `401` with `WWW-Authenticate: Bearer error="invalid_token"` and why.
//!   A request without `Authorization` keeps the digest of its other credentials (none: the
//!   anonymous caller), and the legacy server decides.
//! - `--require-auth` (with `--principal jwt`): the proxy is the resource server
//!   ([`super::protected_resource`]): a request without a token gets `401` with the challenge
//!   naming the proxy's own metadata, which every `401` here names too; a token without every
//!   `--scope` gets `403 insufficient_scope`.

use std::sync::Arc;

use http::header::AUTHORIZATION;
use http::{HeaderMap, HeaderName, Response, StatusCode};

use super::http::ResponseBody;
use super::protected_resource::{refusal, ResourceServer};
use crate::credentials::Credentials;
use crate::jwt::JwtVerifier;
use crate::request::Principal;

/// The caller of one request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Sent on to the legacy server for it (`Authorization`, `--forward-header`).
    pub credentials: Credentials,
    pub principal: Principal,
    /// The principal is a verified token's identity (`--principal jwt`): what it opens (a
    /// legacy client's session) belongs to it even when no credentials are sent on.
    pub verified: bool,
}

/// How the front names its callers (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct CallerAuth {
    /// `--forward-header` names (with `Authorization`, the caller's credentials).
    pub forward: Vec<HeaderName>,
    /// `--principal jwt`: the verifier of the callers' tokens.
    pub jwt: Option<Arc<JwtVerifier>>,
    /// `--require-auth`: the proxy is the resource server (a token is required).
    pub require: Option<Arc<ResourceServer>>,
}

impl CallerAuth {
    /// The caller of a request with `headers`, or the `401` it gets.
    pub async fn identify(&self, headers: &HeaderMap) -> Result<Caller, Response<ResponseBody>> {
        let (credentials, principal) = Credentials::from_request(headers, &self.forward);
        let Some(verifier) = &self.jwt else {
            return Ok(Caller {
                credentials,
                principal,
                verified: false,
            });
        };
        let mut values = headers.get_all(AUTHORIZATION).iter();
        let require = self.require.as_deref();
        let Some(value) = values.next() else {
            if let Some(server) = require {
                return Err(server.unauthorized());
            }
            return Ok(Caller {
                credentials,
                principal,
                verified: false,
            });
        };
        if values.next().is_some() {
            return Err(invalid_token("more than one Authorization header", require));
        }
        let Some(token) = value.to_str().ok().and_then(crate::jwt::bearer_token) else {
            return Err(invalid_token(
                "Authorization is not a bearer token",
                require,
            ));
        };
        match verifier.verify(token).await {
            Ok(identity) => {
                if let Some(server) = require {
                    let lacking = server
                        .scopes()
                        .iter()
                        .any(|scope| !identity.scopes.contains(scope));
                    if lacking {
                        return Err(server.insufficient_scope());
                    }
                }
                Ok(Caller {
                    credentials,
                    principal: identity.principal(),
                    verified: true,
                })
            }
            Err(why) => {
                crate::metrics::global().rejection("invalid_token");
                tracing::info!(why = %why.0, "refused a bearer token");
                Err(invalid_token(&why.0, require))
            }
        }
    }
}

/// `401` with `WWW-Authenticate: Bearer error="invalid_token", error_description="<why>"`
/// (RFC 6750; with `--require-auth` also the proxy's `resource_metadata`) and a JSON-RPC error
/// saying the same.
pub(crate) fn invalid_token(why: &str, server: Option<&ResourceServer>) -> Response<ResponseBody> {
    let why = quotable(why);
    let challenge = match server {
        Some(server) => server.challenge(Some(("invalid_token", &why))),
        None => format!(r#"Bearer error="invalid_token", error_description="{why}""#),
    };
    refusal(
        StatusCode::UNAUTHORIZED,
        &format!("Unauthorized: invalid_token: {why}"),
        &challenge,
    )
}

/// `text` as an RFC 6750 `error_description`: printable ASCII without `"` and `\` (a token's
/// key id is the client's text), at most 200 characters.
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use http::header::WWW_AUTHENTICATE;

    use super::*;

    #[test]
    fn descriptions_cannot_break_out_of_the_challenge() {
        assert_eq!(
            quotable("no key `a\"b\\c\u{e9}` here"),
            "no key `a?b?c?` here"
        );
        let response = invalid_token("key \"x\"", None);
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            response.headers()[WWW_AUTHENTICATE],
            r#"Bearer error="invalid_token", error_description="key ?x?""#
        );
        let server = ResourceServer::new(
            "http://127.0.0.1:1/mcp",
            vec!["https://auth.example.com".into()],
            Vec::new(),
        )
        .unwrap();
        assert_eq!(
            invalid_token("expired", Some(&server)).headers()[WWW_AUTHENTICATE],
            r#"Bearer error="invalid_token", error_description="expired", resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp""#
        );
    }
}
