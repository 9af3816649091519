//! What a scripted client answers to input requests, shared by [`super::ModernClient`] (through
//! its `ClientHandler`) and by raw tests (which build `inputResponses` with [`Script::answer`]).

use serde_json::{json, Map, Value};

/// The action a scripted client takes on a form elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FormAction {
    /// Accept, filling each requested property from [`Script::form_values`].
    #[default]
    Accept,
    Decline,
    Cancel,
}

impl FormAction {
    pub fn as_str(self) -> &'static str {
        match self {
            FormAction::Accept => "accept",
            FormAction::Decline => "decline",
            FormAction::Cancel => "cancel",
        }
    }
}

/// The answers of a scripted client.
#[derive(Debug, Clone)]
pub struct Script {
    /// What to do with form elicitations.
    pub form_action: FormAction,
    /// Values for form fields, by property name. Accepting a form fills every property of its
    /// `requestedSchema` that has a value here (the fixture asks for `name`, `color`, `confirm`).
    pub form_values: Map<String, Value>,
    /// URL elicitations are answered with this action (content-free, as the spec says).
    pub url_action: FormAction,
    /// The text of every sampling answer.
    pub sampling_text: String,
    /// The roots returned for `roots/list`: `(uri, name)`.
    pub roots: Vec<(String, Option<String>)>,
}

impl Default for Script {
    /// Name `Alice`, colour `blue`, `confirm: true`; sampling answers "A short summary.";
    /// roots `file:///test/root` ("Test Root") and `file:///test/other`.
    fn default() -> Self {
        let mut form_values = Map::new();
        form_values.insert("name".into(), json!("Alice"));
        form_values.insert("color".into(), json!("blue"));
        form_values.insert("confirm".into(), json!(true));
        Script {
            form_action: FormAction::Accept,
            form_values,
            url_action: FormAction::Accept,
            sampling_text: "A short summary.".into(),
            roots: vec![
                ("file:///test/root".into(), Some("Test Root".into())),
                ("file:///test/other".into(), None),
            ],
        }
    }
}

impl Script {
    /// The default script with another `name` (and `color`).
    pub fn named(name: &str, color: &str) -> Script {
        let mut script = Script::default();
        script.form_values.insert("name".into(), json!(name));
        script.form_values.insert("color".into(), json!(color));
        script
    }

    pub fn with_form_action(mut self, action: FormAction) -> Script {
        self.form_action = action;
        self
    }

    /// The root URIs joined with `sep` (how the fixture prints them).
    pub fn root_uris(&self, sep: &str) -> String {
        self.roots
            .iter()
            .map(|(uri, _)| uri.as_str())
            .collect::<Vec<_>>()
            .join(sep)
    }

    /// The `InputResponse` for one input request (`method` + `params` as the server sent them).
    pub fn answer(&self, method: &str, params: &Value) -> Result<Value, String> {
        match method {
            "elicitation/create" => Ok(self.elicit(params)),
            "sampling/createMessage" => Ok(self.sample()),
            "roots/list" => Ok(self.list_roots()),
            other => Err(format!("a scripted client cannot answer `{other}`")),
        }
    }

    /// `inputResponses` for a whole `inputRequests` map (`{key: {method, params}}`).
    pub fn answer_all(&self, input_requests: &Value) -> Result<Value, String> {
        let requests = input_requests
            .as_object()
            .ok_or_else(|| format!("inputRequests is not an object: {input_requests}"))?;
        let mut responses = Map::new();
        for (key, request) in requests {
            let method = request["method"]
                .as_str()
                .ok_or_else(|| format!("input request {key} has no method: {request}"))?;
            let params = request.get("params").cloned().unwrap_or(Value::Null);
            responses.insert(key.clone(), self.answer(method, &params)?);
        }
        Ok(Value::Object(responses))
    }

    /// `ElicitResult` JSON.
    pub fn elicit(&self, params: &Value) -> Value {
        if params.get("mode").and_then(Value::as_str) == Some("url") {
            return json!({ "action": self.url_action.as_str() });
        }
        match self.form_action {
            FormAction::Accept => {
                let mut content = Map::new();
                if let Some(properties) = params
                    .pointer("/requestedSchema/properties")
                    .and_then(Value::as_object)
                {
                    for property in properties.keys() {
                        if let Some(value) = self.form_values.get(property) {
                            content.insert(property.clone(), value.clone());
                        }
                    }
                }
                json!({ "action": "accept", "content": content })
            }
            action => json!({ "action": action.as_str() }),
        }
    }

    /// `CreateMessageResult` JSON.
    pub fn sample(&self) -> Value {
        json!({
            "role": "assistant",
            "content": { "type": "text", "text": self.sampling_text },
            "model": "test-model",
            "stopReason": "endTurn",
        })
    }

    /// `ListRootsResult` JSON.
    pub fn list_roots(&self) -> Value {
        let roots: Vec<Value> = self
            .roots
            .iter()
            .map(|(uri, name)| match name {
                Some(name) => json!({ "uri": uri, "name": name }),
                None => json!({ "uri": uri }),
            })
            .collect();
        json!({ "roots": roots })
    }
}

/// One input request a scripted client was asked to fulfil.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenRequest {
    /// The `inputRequests` key (rmcp 3.11 passes it as the request id of the handler context).
    pub key: Option<String>,
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// The request's params as the client's SDK parsed them (re-serialized).
    pub params: Value,
}
