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
    // `ask_three` starts its requests inside `tokio::join!`: reported, not guessed.
    let skipped: Vec<&str> = skipped.iter().map(|s| s.handler.as_str()).collect();
    assert_eq!(skipped, ["ask_three"]);
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
    let error = scaffold_at(&file, three).unwrap_err();
    assert!(error.contains("`ask_three` awaits no"), "{error}");
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
