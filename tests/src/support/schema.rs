//! Validation against the official MCP `schema.json` of a protocol revision, vendored under
//! `tests/schemas/` (no root type: every check names a definition, e.g. `CallToolResultResponse`
//! or `InputRequiredResult`). 2025-11-25 and later are JSON Schema 2020-12 (`$defs`); 2025-06-18
//! is draft-07 (`definitions`).

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::schema_path;

/// One revision's schema, with one compiled validator per definition name asked for.
#[derive(Debug)]
pub struct SpecSchema {
    defs: Value,
    dialect: Dialect,
    validators: Mutex<HashMap<String, std::sync::Arc<jsonschema::Validator>>>,
}

impl SpecSchema {
    /// Loads the vendored 2026-07-28 schema (`tests/schemas/mcp-2026-07-28.schema.json`).
    pub fn load() -> SpecSchema {
        SpecSchema::load_version("2026-07-28")
    }

    /// Loads the vendored schema of protocol revision `version` (e.g. `2025-11-25` for the
    /// messages of a legacy session).
    pub fn load_version(version: &str) -> SpecSchema {
        let path = schema_path(version);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let schema: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        let dialect = match schema["$schema"].as_str() {
            Some("https://json-schema.org/draft/2020-12/schema") => Dialect::Draft202012,
            Some("http://json-schema.org/draft-07/schema#") => Dialect::Draft7,
            other => panic!("unexpected dialect {other:?} in {}", path.display()),
        };
        let defs = schema[dialect.defs_key()].clone();
        assert!(
            defs.is_object(),
            "{} has no {}",
            path.display(),
            dialect.defs_key()
        );
        SpecSchema {
            defs,
            dialect,
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
        let key = self.dialect.defs_key();
        assert!(self.has(name), "schema.json has no {key}/{name}");
        // A root that points at the definition and carries all of them, so that every
        // `#/$defs/...` (or `#/definitions/...`) reference resolves inside the document.
        let mut root = json!({ "$ref": format!("#/{key}/{name}") });
        root[key] = self.defs.clone();
        let validator = jsonschema::options()
            .with_draft(self.dialect.draft())
            .build(&root)
            .unwrap_or_else(|e| panic!("{key}/{name} does not compile: {e}"));
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

/// The JSON Schema dialect of a vendored revision.
#[derive(Debug, Clone, Copy)]
enum Dialect {
    Draft7,
    Draft202012,
}

impl Dialect {
    fn defs_key(self) -> &'static str {
        match self {
            Dialect::Draft7 => "definitions",
            Dialect::Draft202012 => "$defs",
        }
    }

    fn draft(self) -> jsonschema::Draft {
        match self {
            Dialect::Draft7 => jsonschema::Draft::Draft7,
            Dialect::Draft202012 => jsonschema::Draft::Draft202012,
        }
    }
}
