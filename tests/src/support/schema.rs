//! Validation against the 2026-07-28 `schema.json` (JSON Schema 2020-12, no root type: every
//! check names a `$defs` entry, e.g. `CallToolResultResponse` or `InputRequiredResult`).

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::shared_dir;

/// The 2026-07-28 schema, with one compiled validator per `$defs` name asked for.
#[derive(Debug)]
pub struct SpecSchema {
    defs: Value,
    validators: Mutex<HashMap<String, std::sync::Arc<jsonschema::Validator>>>,
}

impl SpecSchema {
    /// Loads `../shared/spec/2026-07-28/schema.json`.
    pub fn load() -> SpecSchema {
        let path = shared_dir().join("spec/2026-07-28/schema.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let schema: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema",
            "unexpected dialect in {}",
            path.display()
        );
        let defs = schema["$defs"].clone();
        assert!(defs.is_object(), "{} has no $defs", path.display());
        SpecSchema {
            defs,
            validators: Mutex::default(),
        }
    }

    /// Whether the schema defines `name`.
    pub fn has(&self, name: &str) -> bool {
        self.defs.get(name).is_some()
    }

    fn validator(&self, name: &str) -> std::sync::Arc<jsonschema::Validator> {
        let mut validators = self.validators.lock().unwrap();
        if let Some(validator) = validators.get(name) {
            return validator.clone();
        }
        assert!(self.has(name), "schema.json has no $defs/{name}");
        // A root that points at the definition and carries all of them, so that every
        // `#/$defs/...` reference resolves inside the document.
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": format!("#/$defs/{name}"),
            "$defs": self.defs,
        });
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&root)
            .unwrap_or_else(|e| panic!("$defs/{name} does not compile: {e}"));
        let validator = std::sync::Arc::new(validator);
        validators.insert(name.to_string(), validator.clone());
        validator
    }

    /// The validation errors of `instance` against `$defs/<name>` (empty: valid).
    pub fn errors(&self, name: &str, instance: &Value) -> Vec<String> {
        let validator = self.validator(name);
        let errors = validator
            .iter_errors(instance)
            .map(|error| format!("{error} at `{}`", error.instance_path))
            .collect();
        errors
    }

    /// Panics (showing the instance) unless `instance` is a valid `$defs/<name>`.
    #[track_caller]
    pub fn assert_valid(&self, name: &str, instance: &Value) {
        let errors = self.errors(name, instance);
        assert!(
            errors.is_empty(),
            "not a valid {name}:\n{}\ninstance: {}",
            errors.join("\n"),
            serde_json::to_string_pretty(instance).unwrap()
        );
    }
}
