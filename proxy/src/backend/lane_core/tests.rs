use super::*;

#[derive(Default)]
struct Capture(Mutex<Vec<Message>>);

impl Outbound for Arc<Capture> {
    fn send_detached(&self, message: Message) {
        self.0.lock().unwrap().push(message);
    }
}

fn core(roots: &[&str]) -> (Arc<LaneCore>, Arc<Capture>) {
    let core = LaneCore::new(
        7,
        CapabilityProfile::default(),
        "test",
        roots.iter().map(|r| r.to_string()).collect(),
        Arc::default(),
    );
    let capture = Arc::new(Capture::default());
    core.set_outbound(Box::new(Arc::clone(&capture)));
    (core, capture)
}

fn request(id: i64, method: &str) -> Message {
    Message::Request {
        id: id.into(),
        method: method.into(),
        params: None,
    }
}

#[tokio::test]
async fn change_notifications_go_to_the_feed_even_from_a_leased_lane() {
    let changes = Arc::new(ChangeFeed::default());
    let mut feed = changes.subscribe();
    let core = LaneCore::new(
        1,
        CapabilityProfile::default(),
        "test",
        Vec::new(),
        Arc::clone(&changes),
    );
    let notification = |method: &str| Message::Notification {
        method: method.into(),
        params: Some(json!({ "uri": "file:///a" })),
    };
    core.handle(notification("notifications/prompts/list_changed"));
    assert_eq!(changes.tools_generation(), 0);
    let (_generation, mut events) = core.attach_lease(None);
    core.handle(notification("notifications/tools/list_changed"));
    core.handle(notification("notifications/resources/updated"));
    // Other notifications still go to the lease.
    core.handle(notification("notifications/message"));
    assert_eq!(changes.tools_generation(), 1);
    let mut seen = Vec::new();
    while let Ok(notice) = feed.try_recv() {
        assert_eq!(notice.lane, 1);
        seen.push(notice.method);
    }
    assert_eq!(
        seen,
        [
            "notifications/prompts/list_changed",
            "notifications/tools/list_changed",
            "notifications/resources/updated"
        ]
    );
    assert!(matches!(
        events.try_recv(),
        Ok(BackendEvent::Notification { method, .. }) if method == "notifications/message"
    ));
    assert!(events.try_recv().is_err());
}

/// A paused call's route is kept aside while another call runs on the lane: what names no
/// call goes to the running one, a withdrawal of the paused call's request and its answer
/// still reach the paused one, and it gets the lane back only once no call runs.
#[tokio::test]
async fn a_parked_lease_keeps_its_own_while_another_call_runs() {
    let (core, sent) = core(&[]);
    let (paused, mut paused_events) = core.attach_lease(None);
    core.handle(request(1, "elicitation/create"));
    assert!(matches!(
        paused_events.try_recv(),
        Ok(BackendEvent::ServerRequest { method, .. }) if method == "elicitation/create"
    ));
    assert!(core.park_lease(paused));
    assert_eq!(core.parked_count(), 1);
    assert!(!core.park_lease(paused), "parked once");
    assert!(
        core.idle_for().is_none(),
        "a lane with a paused call is busy"
    );

    let (running, mut running_events) = core.attach_lease(None);
    core.handle(request(2, "sampling/createMessage"));
    assert!(matches!(
        running_events.try_recv(),
        Ok(BackendEvent::ServerRequest { method, .. }) if method == "sampling/createMessage"
    ));
    assert!(
        paused_events.try_recv().is_err(),
        "nothing unattributed is the paused call's"
    );
    core.handle(Message::Notification {
        method: "notifications/cancelled".into(),
        params: Some(json!({ "requestId": 1 })),
    });
    assert!(matches!(
        paused_events.try_recv(),
        Ok(BackendEvent::Notification { method, .. }) if method == "notifications/cancelled"
    ));
    assert!(running_events.try_recv().is_err());

    assert!(!core.unpark_lease(paused), "another call runs");
    core.responded(&json!(1));
    core.detach_lease(running, None);
    // The running call never answered its request: answered locally on detach.
    assert_eq!(sent.0.lock().unwrap().len(), 1);
    assert!(core.unpark_lease(paused));
    assert_eq!(core.parked_count(), 0);
    core.handle(request(3, "roots/list"));
    assert!(matches!(
        paused_events.try_recv(),
        Ok(BackendEvent::ServerRequest { method, .. }) if method == "roots/list"
    ));
    // Its earlier request was answered: only the new one is answered locally on detach.
    core.detach_lease(paused, None);
    assert_eq!(sent.0.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn unattributed_requests_get_local_answers() {
    let (core, sent) = core(&[]);
    for (id, method) in [
        (1, "ping"),
        (2, "roots/list"),
        (3, "elicitation/create"),
        (4, "sampling/createMessage"),
        (5, "frobnicate"),
    ] {
        core.handle(request(id, method));
    }
    let sent = sent.0.lock().unwrap().clone();
    let outcomes: Vec<_> = sent
        .into_iter()
        .map(|m| match m {
            Message::Response { outcome, .. } => outcome.map_err(|e| e.code),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        outcomes,
        vec![
            Ok(json!({})),
            Err(-32603),
            Ok(json!({"action": "decline"})),
            Err(-32603),
            Err(-32601)
        ]
    );
    let (core, sent) = self::core(&["file:///w"]);
    core.handle(request(1, "roots/list"));
    assert_eq!(
        sent.0.lock().unwrap()[0],
        Message::response(1.into(), Ok(json!({"roots": [{"uri": "file:///w"}]})))
    );
}

#[tokio::test]
async fn leased_requests_go_to_the_lease_and_unanswered_ones_are_answered_on_detach() {
    let (core, sent) = core(&[]);
    let (generation, mut events) = core.attach_lease(None);
    core.handle(request(1, "elicitation/create"));
    core.handle(request(2, "ping"));
    core.handle(request(3, "roots/list"));
    assert!(matches!(
        events.recv().await,
        Some(BackendEvent::ServerRequest { method, .. }) if method == "elicitation/create"
    ));
    core.responded(&json!(1));
    core.detach_lease(generation, None);
    let sent = sent.0.lock().unwrap().clone();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0], Message::response(2.into(), Ok(json!({}))));
    assert!(matches!(&sent[1], Message::Response { id, outcome: Err(_) } if *id == json!(3)));
}

#[tokio::test]
async fn responses_and_progress_reach_their_call() {
    let (core, _) = core(&[]);
    let (message, call, progress) = core
        .start_request("tools/call", json!({"name": "x"}), 0, Some(json!("t")))
        .unwrap();
    let Message::Request { params, .. } = message else {
        panic!()
    };
    assert_eq!(params.unwrap()["_meta"]["progressToken"], json!("t"));
    let mut progress = progress.unwrap();
    core.handle(Message::Notification {
        method: "notifications/progress".into(),
        params: Some(json!({"progressToken": "t", "progress": 1})),
    });
    core.handle(Message::response(
        call.legacy_id.clone(),
        Ok(json!({"ok": true})),
    ));
    assert_eq!(progress.recv().await.unwrap()["progress"], json!(1));
    assert!(
        progress.recv().await.is_none(),
        "closed once the call completed"
    );
    assert_eq!(
        call.response.await.unwrap().unwrap(),
        Ok(Reply::Tree(json!({"ok": true})))
    );
    let (_, call, _) = core.start_request("x", Value::Null, 0, None).unwrap();
    core.mark_dead();
    assert!(matches!(
        call.response.await.unwrap(),
        Err(BackendError::Crashed)
    ));
    assert!(core.start_request("x", Value::Null, 0, None).is_err());
}

/// What the POST reader hands over (an SSE event's data) is routed as the same bytes are: the
/// same count, the same outcome for the call, whatever the unit holds.
#[tokio::test]
async fn handed_over_text_is_routed_as_its_bytes_are() {
    for unit in [
        " {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"a\":1,\"resultType\":null}}\t",
        "{\"result\":[1],\"jsonrpc\":\"2.0\",\"id\":ID}",
        "{\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"\\ud800\":1}}",
        "{\"jsonrpc\":\"2.0\",\"id\":ID,\"error\":{\"code\":-32000,\"message\":\"no\"}}",
        "[{\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{}}]",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"a\":}}",
        "not json",
        " \t",
    ] {
        let mut seen = Vec::new();
        for text in [true, false] {
            let (core, _) = core(&[]);
            let (_, call, _) = core.start_request("x", Value::Null, 0, None).unwrap();
            let unit = unit.replace("ID", &call.legacy_id.to_string());
            let routed = if text {
                core.handle_text_from(unit.clone(), "test", None)
            } else {
                core.handle_bytes_from(unit.as_bytes(), "test", None)
            };
            core.mark_dead();
            let outcome = match call.response.await.unwrap() {
                Ok(Ok(Reply::Raw(raw))) => {
                    Ok(Ok((Some(raw.text().to_owned()), raw.to_value().ok())))
                }
                Ok(Ok(Reply::Tree(tree))) => Ok(Ok((None, Some(tree)))),
                Ok(Err(error)) => Ok(Err(error)),
                Err(error) => Err(error.to_string()),
            };
            seen.push((routed, outcome));
        }
        assert_eq!(seen[0], seen[1], "{unit}");
    }
}

/// An ended lease's channel serves the next lease, emptied: what the old lease left unread never
/// reaches the new one, its unanswered requests are still answered locally, and the new lease
/// gets what comes after.
#[tokio::test]
async fn a_returned_channel_serves_the_next_lease_without_the_old_events() {
    let (core, sent) = core(&[]);
    let (first, events) = core.attach_lease(None);
    core.handle(request(1, "elicitation/create"));
    core.handle(Message::Notification {
        method: "notifications/message".into(),
        params: Some(json!({ "level": "info", "data": "old" })),
    });
    core.detach_lease(first, Some(events));
    assert!(
        core.state().spare_events.is_some(),
        "kept for the next lease"
    );
    assert!(
        matches!(&sent.0.lock().unwrap()[..], [Message::Response { id, .. }] if *id == json!(1)),
        "the unread request answered locally"
    );

    let (second, mut events) = core.attach_lease(None);
    assert!(core.state().spare_events.is_none());
    assert!(events.try_recv().is_err(), "nothing of the first lease");
    core.handle(request(2, "roots/list"));
    assert!(matches!(
        events.try_recv(),
        Ok(BackendEvent::ServerRequest { method, .. }) if method == "roots/list"
    ));
    core.responded(&json!(2));
    core.detach_lease(second, Some(events));
}

/// A channel is kept only when nothing else can send on it, and only on a live lane; a lease
/// that keeps its receiver (none returned) leaves nothing behind.
#[tokio::test]
async fn a_channel_is_kept_only_when_nothing_else_can_send_on_it() {
    let (core, _sent) = core(&[]);
    let (generation, events) = core.attach_lease(None);
    // A delivery waiting for room holds a clone of the sender.
    let waiting = core.state().lease.as_ref().unwrap().events.clone();
    core.detach_lease(generation, Some(events));
    assert!(core.state().spare_events.is_none());
    drop(waiting);

    let (generation, _events) = core.attach_lease(None);
    core.detach_lease(generation, None);
    assert!(core.state().spare_events.is_none());

    let (generation, events) = core.attach_lease(None);
    core.detach_lease(generation, Some(events));
    assert!(core.state().spare_events.is_some());
    core.mark_dead();
    assert!(
        core.state().spare_events.is_none(),
        "a dead lane keeps no channel"
    );
    let (generation, events) = core.attach_lease(None);
    core.detach_lease(generation, Some(events));
    assert!(core.state().spare_events.is_none());
}
