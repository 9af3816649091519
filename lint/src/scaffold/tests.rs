use super::*;

const LEGACY_SERVER: &str = include_str!("../../../tests/legacy-server/src/main.rs");

fn legacy_server() -> std::sync::Arc<SourceFile> {
    SourceFile::new(
        "tests/legacy-server/src/main.rs".into(),
        LEGACY_SERVER.to_owned(),
    )
}

#[test]
fn every_mid_call_handler_of_the_legacy_server_is_scaffolded() {
    let (scaffolds, skipped) = file_scaffolds(&legacy_server()).unwrap();
    let handlers: Vec<(&str, Vec<&str>)> = scaffolds
        .iter()
        .map(|s| {
            (
                s.handler.as_str(),
                s.keys.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        handlers,
        [
            ("ask_name", vec!["ask_name.elicitation.1"]),
            ("confirm_delete", vec!["confirm_delete.elicitation.1"]),
            ("connect_account", vec!["connect_account.elicitation.1"]),
            (
                "ask_twice",
                vec!["ask_twice.elicitation.1", "ask_twice.elicitation.2"]
            ),
        ]
    );
    // `ask_three` joins requests made by helpers (`sample`, `fetch_roots`): reported, not guessed.
    // Nor are the handlers whose requests are made by those helpers: listed with the reason.
    let skipped: Vec<(&str, &str)> = skipped
        .iter()
        .map(|s| (s.handler.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(
        skipped
            .iter()
            .map(|(handler, _)| *handler)
            .collect::<Vec<_>>(),
        ["summarize", "list_workspace_roots", "ask_three", "rounds"]
    );
    for (handler, reason) in skipped {
        assert!(
            reason.contains("the request inside the helper `"),
            "{handler}: {reason}"
        );
    }
}

#[test]
fn the_scaffold_keeps_the_handlers_code_and_seals_its_state() {
    let file = legacy_server();
    let line = LEGACY_SERVER
        .lines()
        .position(|l| l.contains("async fn confirm_delete("))
        .unwrap()
        + 1;
    let scaffold = scaffold_at(&file, line + 3).unwrap();
    assert_eq!(scaffold.handler, "confirm_delete");
    let text = render(std::path::Path::new("src/main.rs"), &[scaffold]);
    insta::assert_snapshot!("confirm_delete", text);
    // The handler's own message, schema and continuation; the codec, never plain serialisation.
    for expected in [
        "message: format!(\"Really delete {path}?\")",
        "let requested_schema = ElicitationSchema::builder()",
        "Some(answer) => mrtr::elicitation(answer)",
        "let result = elicitation_1.map_err(peer_error(\"elicitation\"))?;",
        "let confirmed = result.action == ElicitationAction::Accept",
        "RequestStateCodec::try_new",
        ".open_json::<State>(&sealed)",
        ".seal_json(&self.state)",
        "InputResponses(input_responses): InputResponses,",
        "use rmcp::handler::server::tool::{InputResponses, RequestState};",
        "-> Result<rmcp::model::CallToolResponse, McpError>",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in\n{text}");
    }
    assert!(!text.contains("serde_json::to_string(&self.state"));
}

#[test]
fn lines_outside_handlers_and_unsupported_handlers_are_clear_errors() {
    let file = legacy_server();
    let error = scaffold_at(&file, 1).unwrap_err();
    assert!(
        error.contains("no method of an `impl` block holds line 1"),
        "{error}"
    );
    let echo = LEGACY_SERVER
        .lines()
        .position(|l| l.contains("fn echo("))
        .unwrap()
        + 1;
    let error = scaffold_at(&file, echo).unwrap_err();
    assert!(error.contains("`echo` is not `async`"), "{error}");
    let three = LEGACY_SERVER
        .lines()
        .position(|l| l.contains("async fn ask_three("))
        .unwrap()
        + 1;
    let Err(error) = scaffold_at(&file, three) else {
        panic!("`ask_three` calls helpers that make requests: not scaffolded");
    };
    assert!(
        error.contains("`ask_three`: the request inside the helper `sample`"),
        "{error}"
    );
    let broken = SourceFile::new("x.rs".into(), "fn (".into());
    assert!(file_scaffolds(&broken)
        .unwrap_err()
        .contains("does not parse"));
}

#[test]
fn untyped_elicit_is_reported_not_guessed() {
    let file = SourceFile::new(
        "x.rs".into(),
        "impl S { async fn f(&self, peer: Peer<RoleServer>) -> Result<CallToolResult, McpError> { \
         let a: Option<Name> = peer.elicit(\"name?\").await.unwrap(); todo!() } }"
            .into(),
    );
    let (scaffolds, skipped) = file_scaffolds(&file).unwrap();
    assert!(scaffolds.is_empty());
    assert_eq!(skipped.len(), 1);
    assert!(
        skipped[0].reason.contains("`elicit` without a type"),
        "{skipped:?}"
    );
}

const RETURN_TYPES: &str = include_str!(
    "../../../tests/fixtures/lint/server-initiated-request/src/positive_return_types.rs"
);

fn scaffold_of(source: &str, handler: &str) -> String {
    let file = SourceFile::new("src/tools.rs".into(), source.to_owned());
    let line = source
        .lines()
        .position(|l| l.contains(&format!("async fn {handler}(")))
        .unwrap()
        + 1;
    let scaffold = scaffold_at(&file, line).unwrap();
    assert_eq!(scaffold.handler, handler);
    render(std::path::Path::new("src/tools.rs"), &[scaffold])
}

/// Whether `text` holds `expected`, whitespace and commas aside (the layout, trailing commas
/// included, is prettyplease's).
fn holds(text: &str, expected: &str) -> bool {
    let squeeze = |s: &str| s.replace(',', " ").split_whitespace().collect::<String>();
    squeeze(text).contains(&squeeze(expected))
}

#[test]
fn tools_returning_a_value_are_wrapped_not_refused() {
    // `-> String`: the tail and the early `return` become complete results of that type.
    let text = scaffold_of(RETURN_TYPES, "ask_name");
    for expected in [
        "-> Result<rmcp::model::CallToolResponse, rmcp::ErrorData>",
        "return mrtr::done::<String>(format!(\"Could not ask: {error}\"))",
        "Some(answer) => mrtr::elicitation(answer)",
        "pub fn done<T: IntoCallToolResult>(value: T)",
    ] {
        assert!(holds(&text, expected), "missing `{expected}` in\n{text}");
    }
    let text = scaffold_of(RETURN_TYPES, "nickname");
    assert!(
        holds(&text, "mrtr::done::<CallToolResult>(match answer {"),
        "{text}"
    );
    let text = scaffold_of(RETURN_TYPES, "content");
    assert!(holds(&text, "return mrtr::done::<Content>("), "{text}");
}

#[test]
fn structured_tools_keep_their_output_schema() {
    let text = scaffold_of(RETURN_TYPES, "structured");
    assert!(
        holds(
            &text,
            "output_schema = rmcp::handler::server::tool::schema_for_output::<Greeting>()"
        ),
        "{text}"
    );
    assert!(
        holds(&text, "mrtr::done::<Json<Greeting>>(Json(Greeting"),
        "{text}"
    );
    // A bare `#[tool]` gains the argument list; `Result<Json<T>, E>` keeps `complete`.
    let text = scaffold_of(RETURN_TYPES, "structured_or_error");
    assert!(
        holds(
            &text,
            "#[tool(output_schema = rmcp::handler::server::tool::schema_for_output::<Greeting>())]"
        ),
        "{text}"
    );
    assert!(
        holds(&text, "mrtr::complete::<Json<Greeting>>(Err("),
        "{text}"
    );
}

#[test]
fn handlers_returning_nothing_are_refused_with_the_reason() {
    let file = SourceFile::new(
        "x.rs".into(),
        "impl S { async fn f(&self, peer: Peer<RoleServer>) { \
         let _ = peer.list_roots().await; } }"
            .into(),
    );
    let error = scaffold_at(&file, 1).unwrap_err();
    assert!(error.contains("`f` returns nothing"), "{error}");
}
