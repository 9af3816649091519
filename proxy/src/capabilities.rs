//! Client capabilities: the per-request profile a 2026-07-28 client declares, the legacy
//! `initialize` capabilities that stand for it, and whether an input request fits it.

use serde_json::{json, Value};

/// A request's `_meta["io.modelcontextprotocol/clientCapabilities"]`: the profile the proxy
/// reads from it, taken when the request was read, and the object itself, which only a forwarded
/// request's envelope (and tests) read: left in the request's params, where it came, rather than
/// built again for every request (callgrind, bench/proxy-vs-nginx.md).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientCapabilities {
    profile: CapabilityProfile,
    /// `None`: in the request's `params._meta`
    /// ([`crate::request::FrontRequest::client_capabilities_value`]). Boxed: only a request
    /// another instance passed on has one (and a request is moved a few times on its way).
    value: Option<Box<Value>>,
}

impl Default for ClientCapabilities {
    /// None known: `null`.
    fn default() -> Self {
        Value::Null.into()
    }
}

impl From<Value> for ClientCapabilities {
    fn from(value: Value) -> Self {
        ClientCapabilities {
            profile: CapabilityProfile::from_client_capabilities(&value),
            value: Some(Box::new(value)),
        }
    }
}

impl ClientCapabilities {
    /// The capabilities in the request's `params._meta`, whose profile is `profile`.
    pub fn in_params(profile: CapabilityProfile) -> Self {
        ClientCapabilities {
            profile,
            value: None,
        }
    }

    pub fn profile(&self) -> &CapabilityProfile {
        &self.profile
    }

    /// The object, when it is not in the request's params.
    pub fn value(&self) -> Option<&Value> {
        self.value.as_deref()
    }
}

/// The part of `clientCapabilities` a legacy server can observe. Lanes are keyed by it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CapabilityProfile {
    pub elicitation_form: bool,
    pub elicitation_url: bool,
    pub sampling: bool,
    pub sampling_context: bool,
    pub sampling_tools: bool,
    pub roots: bool,
}

impl CapabilityProfile {
    /// Reads `_meta["io.modelcontextprotocol/clientCapabilities"]`. An empty `elicitation: {}`
    /// means form mode only.
    pub fn from_client_capabilities(capabilities: &Value) -> Self {
        let object = |key: &str| capabilities.get(key).filter(|value| value.is_object());
        let has = |object: &Value, keys: [&str; 2]| keys.map(|key| object.get(key).is_some());
        CapabilityProfile::from_members(
            object("elicitation").map(|elicitation| has(elicitation, ["form", "url"])),
            object("sampling").map(|sampling| has(sampling, ["context", "tools"])),
            object("roots").is_some(),
        )
    }

    /// [`from_client_capabilities`](Self::from_client_capabilities) of what it reads: whether
    /// `elicitation` is an object and has `form` and `url`; whether `sampling` is one and has
    /// `context` and `tools`; whether `roots` is one. The front's raw reader gives these
    /// (`params/scan.rs`).
    pub fn from_members(
        elicitation: Option<[bool; 2]>,
        sampling: Option<[bool; 2]>,
        roots: bool,
    ) -> Self {
        let (form, url) = match elicitation {
            None => (false, false),
            Some([false, false]) => (true, false),
            Some([form, url]) => (form, url),
        };
        CapabilityProfile {
            elicitation_form: form,
            elicitation_url: url,
            sampling: sampling.is_some(),
            sampling_context: sampling.is_some_and(|[context, _]| context),
            sampling_tools: sampling.is_some_and(|[_, tools]| tools),
            roots,
        }
    }

    /// Whether a legacy session initialized with this profile declares everything `other`
    /// declares (and maybe more): a call of `other` may run there, the proxy refusing what the
    /// legacy server asks beyond `other` (`admits`).
    pub fn covers(&self, other: &CapabilityProfile) -> bool {
        let implies = |has: bool, wanted: bool| has || !wanted;
        implies(self.elicitation_form, other.elicitation_form)
            && implies(self.elicitation_url, other.elicitation_url)
            && implies(self.sampling, other.sampling)
            && implies(self.sampling_context, other.sampling_context)
            && implies(self.sampling_tools, other.sampling_tools)
            && implies(self.roots, other.roots)
    }

    /// A short stable name for logs and metrics, e.g. `form+url+sampling+roots`.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        for (on, name) in [
            (self.elicitation_form, "form"),
            (self.elicitation_url, "url"),
            (self.sampling, "sampling"),
            (self.sampling_context, "context"),
            (self.sampling_tools, "tools"),
            (self.roots, "roots"),
        ] {
            if on {
                parts.push(name);
            }
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join("+")
        }
    }

    /// The `capabilities` to declare in a legacy `initialize` of `version`. Never `tasks`;
    /// roots without `listChanged` (2026-07-28 has no roots notification to carry it).
    pub fn legacy_capabilities(&self, version: &str) -> Value {
        let mut capabilities = json!({});
        if self.elicitation_form || self.elicitation_url {
            capabilities["elicitation"] = if version >= "2025-11-25" {
                let mut modes = json!({});
                if self.elicitation_form {
                    modes["form"] = json!({});
                }
                if self.elicitation_url {
                    modes["url"] = json!({});
                }
                modes
            } else {
                json!({})
            };
        }
        if self.sampling {
            let mut sampling = json!({});
            if version >= "2025-11-25" {
                if self.sampling_context {
                    sampling["context"] = json!({});
                }
                if self.sampling_tools {
                    sampling["tools"] = json!({});
                }
            }
            capabilities["sampling"] = sampling;
        }
        if self.roots {
            capabilities["roots"] = json!({"listChanged": false});
        }
        capabilities
    }

    /// Whether an input request (legacy `method` + `params`) may be shown to a client with this
    /// profile. On refusal, the `requiredCapabilities` to report with `-32021`.
    pub fn admits(&self, method: &str, params: &Value) -> Result<(), Value> {
        match method {
            "elicitation/create" => {
                let url_mode = params.get("mode").and_then(Value::as_str) == Some("url");
                if url_mode && !self.elicitation_url {
                    Err(json!({"elicitation": {"url": {}}}))
                } else if !url_mode && !self.elicitation_form {
                    Err(json!({"elicitation": {"form": {}}}))
                } else {
                    Ok(())
                }
            }
            "sampling/createMessage" => {
                let uses_tools =
                    params.get("tools").is_some() || params.get("toolChoice").is_some();
                if !self.sampling {
                    Err(json!({"sampling": {}}))
                } else if uses_tools && !self.sampling_tools {
                    Err(json!({"sampling": {"tools": {}}}))
                } else {
                    Ok(())
                }
            }
            "roots/list" => {
                if self.roots {
                    Ok(())
                } else {
                    Err(json!({"roots": {}}))
                }
            }
            _ => Err(json!({})),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_covers_the_profiles_it_declares_more_than() {
        let form = CapabilityProfile {
            elicitation_form: true,
            ..CapabilityProfile::default()
        };
        let everything = CapabilityProfile {
            elicitation_form: true,
            elicitation_url: true,
            sampling: true,
            sampling_context: true,
            sampling_tools: true,
            roots: true,
        };
        let none = CapabilityProfile::default();
        assert!(everything.covers(&form) && everything.covers(&none));
        assert!(form.covers(&none) && form.covers(&form));
        assert!(!form.covers(&everything) && !none.covers(&form));
        let sampling = CapabilityProfile {
            sampling: true,
            ..CapabilityProfile::default()
        };
        assert!(!form.covers(&sampling) && !sampling.covers(&form));
    }

    #[test]
    fn profiles_read_modes_and_sub_capabilities() {
        let all = CapabilityProfile::from_client_capabilities(
            &json!({"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}}),
        );
        assert_eq!(all.label(), "form+url+sampling+tools+roots");
        let bare = CapabilityProfile::from_client_capabilities(&json!({"elicitation": {}}));
        assert_eq!(bare.label(), "form");
        assert_eq!(
            CapabilityProfile::from_client_capabilities(&json!({})).label(),
            "none"
        );
    }

    #[test]
    fn admission_follows_kind_mode_and_tools() {
        let form_only = CapabilityProfile::from_client_capabilities(&json!({"elicitation": {}}));
        assert!(form_only
            .admits("elicitation/create", &json!({"message": "m"}))
            .is_ok());
        assert_eq!(
            form_only.admits("elicitation/create", &json!({"mode": "url"})),
            Err(json!({"elicitation": {"url": {}}}))
        );
        assert_eq!(
            form_only.admits("roots/list", &json!({})),
            Err(json!({"roots": {}}))
        );
        let sampling = CapabilityProfile::from_client_capabilities(&json!({"sampling": {}}));
        assert!(sampling
            .admits("sampling/createMessage", &json!({"messages": []}))
            .is_ok());
        assert_eq!(
            sampling.admits("sampling/createMessage", &json!({"tools": []})),
            Err(json!({"sampling": {"tools": {}}}))
        );
    }

    #[test]
    fn legacy_capabilities_follow_the_negotiated_revision() {
        let profile = CapabilityProfile::from_client_capabilities(
            &json!({"elicitation": {"url": {}}, "sampling": {"context": {}}, "roots": {}}),
        );
        assert_eq!(
            profile.legacy_capabilities("2025-11-25"),
            json!({"elicitation": {"url": {}}, "sampling": {"context": {}}, "roots": {"listChanged": false}})
        );
        assert_eq!(
            profile.legacy_capabilities("2025-06-18"),
            json!({"elicitation": {}, "sampling": {}, "roots": {"listChanged": false}})
        );
    }
}
