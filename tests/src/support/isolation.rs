//! Concurrent clients that must never see each other's questions or answers.

use serde_json::json;

use super::{json_mentions, tool_text, ModernClient, Script};

/// Runs `clients` rmcp 3.11 clients against the proxy at `url` at once, each with its own
/// `Authorization` and answers (`client-i`, `colour-i`), each calling `ask_name` and `ask_twice`
/// concurrently; asserts that every client gets its own answers back and is asked only its own
/// questions (the legacy fixture servers put the name in the colour question).
pub async fn assert_concurrent_clients_are_isolated(url: &str, clients: usize) {
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..clients {
        let url = url.to_owned();
        tasks.spawn(async move {
            let name = format!("client-{i}");
            let colour = format!("colour-{i}");
            let client =
                ModernClient::connect(&url, Script::named(&name, &colour), Some(&name)).await;
            let (greeting, likes) = tokio::join!(
                client.call_tool("ask_name", json!({})),
                client.call_tool("ask_twice", json!({})),
            );
            let greeting = tool_text(&greeting.unwrap_or_else(|e| panic!("{name} ask_name: {e}")));
            let likes = tool_text(&likes.unwrap_or_else(|e| panic!("{name} ask_twice: {e}")));
            let seen = client.seen();
            client.close().await;
            (i, greeting, likes, seen)
        });
    }
    let mut done = 0;
    while let Some(outcome) = tasks.join_next().await {
        let (i, greeting, likes, seen) = outcome.expect("client task");
        let name = format!("client-{i}");
        assert_eq!(greeting, format!("Hello, {name}!"));
        assert_eq!(likes, format!("{name} likes colour-{i}"));
        assert_eq!(seen.len(), 3, "{name}: 1 + 2 elicitations: {seen:#?}");
        assert!(
            seen.iter()
                .any(|s| s.params["message"] == format!("{name}, what is your favourite colour?")),
            "{name} was asked its own colour question: {seen:#?}"
        );
        for other in (0..clients).filter(|&j| j != i) {
            let other = format!("client-{other}");
            assert!(
                seen.iter().all(|s| !json_mentions(&s.params, &other)),
                "{name} was asked {other}'s question: {seen:#?}"
            );
        }
        done += 1;
    }
    assert_eq!(done, clients);
}
