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
    // The handlers whose requests their helpers make (`sample`, `fetch_roots`) too: those
    // helpers take the round state, and `ask_three`'s `tokio::join!` asks in one round.
    assert_eq!(
        handlers,
        [
            ("ask_name", vec!["ask_name.elicitation.1"]),
            ("confirm_delete", vec!["confirm_delete.elicitation.1"]),
            ("connect_account", vec!["connect_account.elicitation.1"]),
            // The legacy -32042 error: a URL-mode input request.
            ("open_vault", vec!["open_vault.elicitation.1"]),
            ("summarize", vec![]),
            ("list_workspace_roots", vec![]),
            (
                "ask_twice",
                vec!["ask_twice.elicitation.1", "ask_twice.elicitation.2"]
            ),
            ("ask_three", vec!["ask_three.elicitation.1"]),
            ("rounds", vec![]),
        ]
    );
    assert!(skipped.is_empty(), "{skipped:?}");
    let three = scaffolds.iter().find(|s| s.handler == "ask_three").unwrap();
    let helpers: Vec<String> = three
        .helpers
        .iter()
        .map(|h| h.sig.ident.to_string())
        .collect();
    assert_eq!(helpers.len(), 2, "{helpers:?}");
    for helper in ["sample", "fetch_roots"] {
        assert!(helpers.iter().any(|h| h == helper), "{helpers:?}");
    }
    let text = render(
        std::path::Path::new("src/main.rs"),
        std::slice::from_ref(three),
    );
    for expected in [
        "match sample(&mut rounds, &peer, \"Greet the user in one sentence.\").await {",
        "Err(interrupt) => return interrupt.end(),",
        "async fn sample(rounds: &mut mrtr::Rounds, peer: &Peer<RoleServer>, prompt: &str)",
        "-> Result<Result<String, McpError>, mrtr::Interrupt>",
        "return Err(rounds.ask([(\"sample.sampling.1\",",
    ] {
        assert!(holds(&text, expected), "missing `{expected}` in\n{text}");
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
    // A helper with no MRTR form (not `async`): its caller is refused, naming it; the helper
    // itself is named with its callers.
    let blocking = SourceFile::new(
        "x.rs".into(),
        "impl S {\n#[tool]\nasync fn f(&self, peer: Peer<RoleServer>) -> Result<CallToolResult, \
         McpError> {\nOk(roots(&peer))\n}\n}\nfn roots(peer: &Peer<RoleServer>) -> usize {\n\
         block_on(peer.list_roots()).map_or(0, |r| r.roots.len())\n}\n"
            .into(),
    );
    let error = scaffold_at(&blocking, 3).unwrap_err();
    assert!(
        error.contains("`f`: the request inside the helper `roots` is not rewritten"),
        "{error}"
    );
    let error = scaffold_at(&blocking, 8).unwrap_err();
    assert!(error.contains("`roots` is not `async`"), "{error}");
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

const CLOSURES: &str =
    include_str!("../../../tests/fixtures/lint/server-initiated-request/src/positive_closures.rs");

/// A closure the handler calls is inlined at each call (each its own request and key); an
/// `async` block awaited on the spot is a plain block; a closure that returns the request's
/// future is awaited where it is called. The closure's binding is gone: no legacy request is
/// left.
#[test]
fn closures_the_handler_calls_are_inlined_at_each_call() {
    let file = SourceFile::new("src/tools.rs".into(), CLOSURES.to_owned());
    let (scaffolds, skipped) = file_scaffolds(&file).unwrap();
    let keys: Vec<(&str, Vec<&str>)> = scaffolds
        .iter()
        .map(|s| {
            (
                s.handler.as_str(),
                s.keys.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            (
                "approve",
                vec!["approve.elicitation.1", "approve.elicitation.2"]
            ),
            ("summarise", vec!["summarise.sampling.1"]),
            ("quick_approval", vec!["quick_approval.elicitation.1"]),
            ("strict", vec!["strict.roots.1"]),
            ("per_file", vec!["per_file.sampling.1"]),
            ("all_or_nothing", vec!["all_or_nothing.sampling.1"]),
        ]
    );
    // `?` leaves the closure's labelled block, not the handler.
    let strict = scaffold_of(CLOSURES, "strict");
    assert!(
        holds(
            &strict,
            "let count = 'closure_1: { let roots = match match rounds.answer(\"strict.roots.1\")"
        ),
        "{strict}"
    );
    assert!(
        holds(
            &strict,
            "Err(error) => break 'closure_1 Err(From::from(error)),"
        ),
        "{strict}"
    );
    let all = scaffold_of(CLOSURES, "all_or_nothing");
    assert!(
        holds(&all, "Err(error) => break 'closure_2 Err(error),"),
        "{all}"
    );
    let per_file = scaffold_of(CLOSURES, "per_file");
    assert!(
        holds(&per_file, "let answers = { let mut values = Vec::new(); for file in files.iter() { values.push({ let peer = peer.clone(); let request = prompt(file); match rounds.answer(\"per_file.sampling.1\")"),
        "{per_file}"
    );
    let approve = scaffold_of(CLOSURES, "approve");
    for expected in [
        "let first = { let who: &str = \"lead\"; let params = yes_no(",
        "let second = { let who: &str = \"owner\";",
    ] {
        assert!(
            holds(&approve, expected),
            "missing `{expected}` in\n{approve}"
        );
    }
    // The handler, without the support module after it.
    let handler_only = approve.split("mod mrtr").next().unwrap();
    for gone in ["let ask =", "create_elicitation(", "async move"] {
        assert!(!handler_only.contains(gone), "`{gone}` left in\n{approve}");
    }
    let summarise = scaffold_of(CLOSURES, "summarise");
    assert!(
        holds(
            &summarise,
            "let summary = { let request = prompt(\"Summarise the change\");"
        ),
        "{summarise}"
    );
    let handler_only = summarise.split("mod mrtr").next().unwrap();
    assert!(!handler_only.contains("async {"), "{summarise}");
    let quick = scaffold_of(CLOSURES, "quick_approval");
    assert!(
        holds(&quick, "match { let question: &'static str = \"Approve now?\"; match rounds.answer(\"quick_approval.elicitation.1\")"),
        "{quick}"
    );

    // Stored, left with `?`, handed to an iterator: refused, each with its reason.
    let reasons: Vec<(&str, &str)> = skipped
        .iter()
        .map(|s| (s.handler.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:#?}");
    assert!(
        reasons[0].0 == "deferred"
            && reasons[0]
                .1
                .contains("closure `later` that makes a request is stored or handed on"),
        "{reasons:#?}"
    );
    assert!(
        reasons[1].0 == "streamed" && reasons[1].1.contains("handed to `then(..)`"),
        "{reasons:#?}"
    );
}

/// A request closure used as a value anywhere (a macro's argument, a field) is refused; one
/// called in a macro's arguments is inlined there.
#[test]
fn request_closures_used_as_values_are_refused_and_calls_in_macros_inlined() {
    let handler = |body: &str| {
        format!(
            "impl S {{ #[tool] async fn f(&self, peer: Peer<RoleServer>) -> String {{ \
             let ask = |m: &str| peer.elicit::<Name>(m); {body} }} }}"
        )
    };
    let outcome = |body: &str| {
        let file = SourceFile::new("x.rs".into(), handler(body));
        let (scaffolds, skipped) = file_scaffolds(&file).unwrap();
        match (scaffolds.first(), skipped.first()) {
            (Some(scaffold), None) => Ok(scaffold.keys.clone()),
            (None, Some(skipped)) => Err(skipped.reason.clone()),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        outcome("format!(\"{:?} {:?}\", ask(\"a\").await, ask(\"b\").await)"),
        Ok(vec![
            "f.elicitation.1".to_owned(),
            "f.elicitation.2".to_owned()
        ])
    );
    for stored in [
        "let v = vec![ask]; String::new()",
        "let s = Later { run: ask }; String::new()",
        "let g = ask; g(\"a\").await; String::new()",
    ] {
        let reason = outcome(stored).unwrap_err();
        assert!(reason.contains("closure `ask`"), "{stored}: {reason}");
    }
    // A request closure called in a spawned task: refused as the task's request.
    let reason =
        outcome("tokio::spawn(async move { let _ = ask(\"later\").await; }); String::new()")
            .unwrap_err();
    assert!(reason.contains("runs in a task of its own"), "{reason}");
    // An `async` closure that leaves with `?`, its future used as a value: refused.
    let file = SourceFile::new(
        "x.rs".into(),
        "impl S { #[tool] async fn f(&self, peer: Peer<RoleServer>) -> Result<String, E> { \
         let n = || async { Ok::<_, E>(peer.list_roots().await?) }; \
         let m = timeout(d, n()).await; Ok(m) } }"
            .into(),
    );
    let (_, skipped) = file_scaffolds(&file).unwrap();
    assert!(
        skipped[0]
            .reason
            .contains("closure `n` that makes a request leaves its body with `?`"),
        "{skipped:?}"
    );
}

/// A `CustomRequest` whose method is a legacy request's string literal (also through a `let`
/// binding) becomes the typed input request of that kind; a method that is not a literal is
/// refused; another literal is not a legacy request.
#[test]
fn custom_requests_of_a_literal_method_become_typed_input_requests() {
    let tool = |body: &str| {
        let file = SourceFile::new(
            "x.rs".into(),
            format!(
                "impl S {{ #[tool] async fn f(&self, peer: Peer<RoleServer>, method: String) \
                 -> Result<String, E> {{ {body} Ok(String::new()) }} }}"
            ),
        );
        let (scaffolds, skipped) = file_scaffolds(&file).unwrap();
        match (scaffolds.first(), skipped.first()) {
            (Some(scaffold), None) => Ok((
                scaffold.keys.clone(),
                quote::ToTokens::to_token_stream(scaffold.item.as_ref().unwrap()).to_string(),
            )),
            (None, Some(skipped)) => Err(skipped.reason.clone()),
            (None, None) => Err("nothing".to_owned()),
            other => panic!("{other:?}"),
        }
    };
    let (keys, text) = tool(
        "let request = ServerRequest::CustomRequest(CustomRequest::new(\"sampling/createMessage\", \
         Some(params))); let _ = peer.send_request(request).await;",
    )
    .unwrap();
    assert_eq!(keys, ["f.sampling.1"]);
    assert!(
        holds(
            &text,
            "InputRequest :: CreateMessage (rmcp :: model :: CreateMessageRequest :: new (mrtr :: \
             custom_params (request) ?))"
        ),
        "{text}"
    );
    assert!(
        holds(
            &text,
            "mrtr :: sampling (answer) . map (rmcp :: model :: ClientResult :: from)"
        ),
        "{text}"
    );
    let (keys, _) = tool(
        "let _ = peer.send_request(ServerRequest::CustomRequest(CustomRequest { method: \
         \"roots/list\".to_owned(), params: None, extensions: Default::default() })).await;",
    )
    .unwrap();
    assert_eq!(keys, ["f.roots.1"]);
    // A typed variant sent as it is built: its typed input request, built from its params.
    let (keys, text) =
        tool("let _ = peer.send_request(ServerRequest::ElicitRequest(params.into())).await;")
            .unwrap();
    assert_eq!(keys, ["f.elicitation.1"]);
    assert!(
        holds(
            &text,
            "InputRequest :: Elicitation (rmcp :: model :: ElicitRequest :: new (params))"
        ),
        "{text}"
    );
    let dynamic = tool(
        "let _ = peer.send_request(ServerRequest::CustomRequest(CustomRequest::new(method, None))).await;",
    )
    .unwrap_err();
    assert!(
        dynamic.contains("a `ServerRequest::CustomRequest` whose method is not a string literal"),
        "{dynamic}"
    );
    // The application's own method: no legacy request, nothing to scaffold.
    assert_eq!(
        tool(
            "let _ = peer.send_request(ServerRequest::CustomRequest(CustomRequest::new(\"acme/reindex\", None))).await;"
        ),
        Err("nothing".to_owned())
    );
}
