//! Who each connection is: the `Authorization` it sends, and what the `mrtr` flow must be
//! answered for it.
//!
//! - `--authorization VALUE`: every connection sends `VALUE` (one caller with credentials: the
//!   proxy forwards them and serves the caller from a lane pool of its own).
//! - `--authorization-file FILE`: one value a line; connection `i` sends line `i mod lines`, so
//!   there are as many callers as lines (each with lane pools of its own), e.g. bearer tokens the
//!   legacy server accepts, or JWTs of different subjects for `--principal jwt`.
//! - `--mrtr-tool NAME`: the tool of the `mrtr` flow (default `ask_name`); it must ask for a
//!   `name` (answered `Alice`).
//! - `--mrtr-expect TEXT`: the text that flow must answer (default `Hello, Alice!`); `{token}`
//!   in it stands for the connection's bearer token (its `Authorization` without `Bearer `), for
//!   a legacy server that answers as the caller, e.g. `{token}: hello Alice`: every resumed call
//!   must have run as its own caller.

use std::sync::OnceLock;

use reqwest::header::HeaderValue;

/// The `Authorization` values, connection `i` sending the `i mod len`-th.
static AUTHORIZATION: OnceLock<Vec<HeaderValue>> = OnceLock::new();
static MRTR_TOOL: OnceLock<String> = OnceLock::new();
static MRTR_EXPECT: OnceLock<String> = OnceLock::new();

/// Takes `flag` and its `value` if the flag is one of this module's (`None`: it is not).
pub fn parse_flag(flag: &str, value: &str) -> Option<Result<(), String>> {
    let set = |values: Vec<String>| -> Result<(), String> {
        let values = values
            .iter()
            .map(|value| HeaderValue::from_str(value))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| format!("bad {flag} value"))?;
        if values.is_empty() {
            return Err(format!("{flag}: no value"));
        }
        AUTHORIZATION
            .set(values)
            .map_err(|_| "--authorization and --authorization-file: one of them, once".to_owned())
    };
    Some(match flag {
        "--authorization" => set(vec![value.to_owned()]),
        "--authorization-file" => std::fs::read_to_string(value)
            .map_err(|e| format!("cannot read --authorization-file {value}: {e}"))
            .and_then(|text| {
                set(text
                    .lines()
                    .map(str::trim)
                    .filter(|line| !line.is_empty())
                    .map(str::to_owned)
                    .collect())
            }),
        "--mrtr-tool" => MRTR_TOOL
            .set(value.to_owned())
            .map_err(|_| "--mrtr-tool given twice".to_owned()),
        "--mrtr-expect" => MRTR_EXPECT
            .set(value.to_owned())
            .map_err(|_| "--mrtr-expect given twice".to_owned()),
        _ => return None,
    })
}

/// The `Authorization` of connection `task`, if any.
pub fn authorization(task: usize) -> Option<&'static HeaderValue> {
    AUTHORIZATION
        .get()
        .map(|values| &values[task % values.len()])
}

/// The tool of the `mrtr` flow.
pub fn mrtr_tool() -> &'static str {
    MRTR_TOOL.get().map_or("ask_name", String::as_str)
}

/// The text the `mrtr` flow of connection `task` must end with.
pub fn mrtr_expected(task: usize) -> String {
    let text = MRTR_EXPECT.get().map_or("Hello, Alice!", String::as_str);
    if !text.contains("{token}") {
        return text.to_owned();
    }
    let token = authorization(task)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.strip_prefix("Bearer ").unwrap_or(value))
        .unwrap_or("");
    text.replace("{token}", token)
}
