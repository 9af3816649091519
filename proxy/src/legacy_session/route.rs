//! Where a server message goes (see [`super::relay`]): the targets in order of preference, and
//! sending without waiting (a target that cannot take the message now gives it back).

use tokio::sync::mpsc;

use super::relay::{InFlight, SessionState};
use crate::jsonrpc::Message;
use crate::request::Outgoing;

/// Where a server message goes.
pub(super) enum Target {
    Request(mpsc::Sender<Outgoing>),
    Standalone(mpsc::Sender<Message>),
}

/// The targets of a server message, best first.
pub(super) fn targets(state: &SessionState, progress: Option<&str>, change: bool) -> Vec<Target> {
    let mut targets = Vec::new();
    let streams: Vec<&InFlight> = state
        .in_flight
        .values()
        .filter(|flight| flight.stream.as_ref().is_some_and(|s| !s.is_closed()))
        .collect();
    if let Some(token) = progress {
        if let Some(flight) = streams
            .iter()
            .find(|flight| flight.progress_token.as_deref() == Some(token))
        {
            targets.extend(flight.stream.clone().map(Target::Request));
        }
    }
    if !change && streams.len() == 1 {
        targets.extend(streams[0].stream.clone().map(Target::Request));
    }
    if let Some(standalone) = state.standalone.as_ref().filter(|s| !s.is_closed()) {
        targets.push(Target::Standalone(standalone.clone()));
    }
    if let Some(newest) = streams.iter().max_by_key(|flight| flight.order) {
        targets.extend(newest.stream.clone().map(Target::Request));
    }
    targets
}

/// Sends without waiting; the message comes back when the target cannot take it now.
pub(super) fn send(target: Target, message: Message) -> Result<(), Message> {
    match target {
        Target::Request(tx) => tx
            .try_send(Outgoing::Notification(message))
            .map_err(|error| match error.into_inner() {
                Outgoing::Notification(message) | Outgoing::Final { message, .. } => message,
            }),
        Target::Standalone(tx) => tx.try_send(message).map_err(|error| error.into_inner()),
    }
}

pub(super) fn flush_queue_into_request(state: &mut SessionState, stream: &mpsc::Sender<Outgoing>) {
    while let Some(message) = state.queue.pop_front() {
        if let Err(error) = stream.try_send(Outgoing::Notification(message)) {
            if let Outgoing::Notification(message) = error.into_inner() {
                state.queue.push_front(message);
            }
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flight(stream: &mpsc::Sender<Outgoing>, token: &str, order: u64) -> InFlight {
        InFlight {
            legacy_id: None,
            progress_token: Some(token.to_owned()),
            stream: Some(stream.clone()),
            order,
            cancelled: false,
        }
    }

    fn is_request(target: &Target, stream: &mpsc::Sender<Outgoing>) -> bool {
        matches!(target, Target::Request(tx) if tx.same_channel(stream))
    }

    #[test]
    fn progress_finds_its_request_and_the_rest_prefers_the_only_request() {
        let (a, _ra) = mpsc::channel(4);
        let (b, _rb) = mpsc::channel(4);
        let (get, _rg) = mpsc::channel(4);
        let mut state = SessionState {
            standalone: Some(get),
            ..SessionState::default()
        };
        state.in_flight.insert("1".into(), flight(&a, "\"t1\"", 1));
        // One request running: server requests go to it, change notifications to the GET stream.
        let only = targets(&state, None, false);
        assert!(is_request(&only[0], &a));
        assert!(matches!(
            targets(&state, None, true)[0],
            Target::Standalone(_)
        ));
        state.in_flight.insert("2".into(), flight(&b, "\"t2\"", 2));
        // Two running: progress by token, anything else the GET stream, then the newest.
        assert!(is_request(&targets(&state, Some("\"t1\""), false)[0], &a));
        let two = targets(&state, None, false);
        assert!(matches!(two[0], Target::Standalone(_)));
        assert!(is_request(&two[1], &b));
        // A closed stream is skipped.
        drop(_rb);
        assert!(is_request(&targets(&state, Some("\"t2\""), false)[0], &a));
    }
}
