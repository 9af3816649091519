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

use std::sync::Arc;

use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode};

use super::http::{json_response, ResponseBody};
use super::validate::error_response;
use crate::credentials::{Credentials, UNAUTHORIZED};
use crate::jsonrpc::ErrorObject;
use crate::jwt::JwtVerifier;
use crate::request::Principal;

/// The caller of one request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Sent on to the legacy server for it (`Authorization`, `--forward-header`).
    pub credentials: Credentials,
    pub principal: Principal,
}

/// How the front names its callers (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct CallerAuth {
    /// `--forward-header` names (with `Authorization`, the caller's credentials).
    pub forward: Vec<HeaderName>,
    /// `--principal jwt`: the verifier of the callers' tokens.
    pub jwt: Option<Arc<JwtVerifier>>,
}

impl CallerAuth {
    /// The caller of a request with `headers`, or the `401` it gets.
    pub async fn identify(&self, headers: &HeaderMap) -> Result<Caller, Response<ResponseBody>> {
        let (credentials, principal) = Credentials::from_request(headers, &self.forward);
        let Some(verifier) = &self.jwt else {
            return Ok(Caller {
                credentials,
                principal,
            });
        };
        let mut values = headers.get_all(AUTHORIZATION).iter();
        let Some(value) = values.next() else {
            return Ok(Caller {
                credentials,
                principal,
            });
        };
        if values.next().is_some() {
            return Err(invalid_token("more than one Authorization header"));
        }
        let Some(token) = value.to_str().ok().and_then(crate::jwt::bearer_token) else {
            return Err(invalid_token("Authorization is not a bearer token"));
        };
        match verifier.verify(token).await {
            Ok(identity) => Ok(Caller {
                credentials,
                principal: identity.principal(),
            }),
            Err(why) => {
                crate::metrics::global().rejection("invalid_token");
                tracing::info!(why = %why.0, "refused a bearer token");
                Err(invalid_token(&why.0))
            }
        }
    }
}

/// `401` with `WWW-Authenticate: Bearer error="invalid_token", error_description="<why>"`
/// (RFC 6750) and a JSON-RPC error saying the same.
pub(crate) fn invalid_token(why: &str) -> Response<ResponseBody> {
    let why = quotable(why);
    let mut response = json_response(
        StatusCode::UNAUTHORIZED,
        &error_response(
            None,
            &ErrorObject::new(UNAUTHORIZED, format!("Unauthorized: invalid_token: {why}")),
        ),
    );
    let challenge = format!(r#"Bearer error="invalid_token", error_description="{why}""#);
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    response
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
    use super::*;

    #[test]
    fn descriptions_cannot_break_out_of_the_challenge() {
        assert_eq!(
            quotable("no key `a\"b\\c\u{e9}` here"),
            "no key `a?b?c?` here"
        );
        let response = invalid_token("key \"x\"");
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            response.headers()[WWW_AUTHENTICATE],
            r#"Bearer error="invalid_token", error_description="key ?x?""#
        );
    }
}
