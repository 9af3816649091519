//! A legacy client on the stdio front: the first message was `initialize`, so the whole process
//! is one legacy session ([`crate::legacy_session`]), relayed to its own lane (with a stdio
//! backend: its own child process).
//!
//! Everything the client sends is relayed in order of arrival; requests run concurrently (one
//! task each), so a server request can be answered while the call that caused it waits. Every
//! server message and response goes to stdout, one per line. A refused `initialize` is answered
//! and the next `initialize` tried again; anything else before a session exists gets an error.
//! EOF on stdin ends the session (the legacy side is shut down); a legacy server that goes away
//! ends the front too, as a stdio server's exit would.

use std::sync::Arc;

use serde_json::Value;
use tokio::io::AsyncBufRead;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::stdio::{line_of, parse_line, read_line, Line, MAX_LINE_BYTES};
use super::validate::{error_response, Rejection};
use super::SINK_CAPACITY;
use crate::jsonrpc::{codes, ErrorObject, Message};
use crate::legacy_session::{LegacySessions, RelayError, Session};

fn message_line(message: &Message) -> String {
    let mut line = message.to_line();
    line.push('\n');
    line
}

/// Serves a legacy session on stdin/stdout, `first` being the client's `initialize`.
pub(super) async fn serve<R>(
    legacy: &Arc<LegacySessions>,
    first: Message,
    reader: &mut R,
    buffer: &mut Vec<u8>,
    lines: &mpsc::Sender<String>,
    stop: &CancellationToken,
) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin + Send,
{
    let mut session: Option<(Arc<Session>, mpsc::Sender<Message>)> = None;
    let tasks = TaskTracker::new();
    let mut next = Some(first);
    let result = loop {
        let message = match next.take() {
            Some(message) => message,
            None => {
                let ended = async {
                    match &session {
                        Some((session, _)) => session.ended().await,
                        None => std::future::pending().await,
                    }
                };
                let line = tokio::select! {
                    biased;
                    () = stop.cancelled() => break Ok(()),
                    () = ended => {
                        tracing::info!("the legacy session ended: stopping the stdio front");
                        break Ok(());
                    }
                    line = read_line(reader, buffer, MAX_LINE_BYTES) => line,
                };
                match line {
                    Err(error) => break Err(error),
                    Ok(Line::Eof) => break Ok(()),
                    Ok(Line::TooLong) => {
                        let error = ErrorObject::new(
                            codes::INVALID_REQUEST,
                            format!("line longer than {MAX_LINE_BYTES} bytes"),
                        );
                        if lines
                            .send(line_of(&error_response(None, &error)))
                            .await
                            .is_err()
                        {
                            break Ok(());
                        }
                        continue;
                    }
                    Ok(Line::Complete) => match parse_line(buffer) {
                        None => continue,
                        Some(Ok(message)) => message,
                        Some(Err(error)) => {
                            let rejection = Rejection::unreadable(&error);
                            if lines.send(line_of(&rejection.to_value())).await.is_err() {
                                break Ok(());
                            }
                            continue;
                        }
                    },
                }
            }
        };
        let reply = match &session {
            None => open(legacy, message, &mut session, lines).await,
            Some((session, out)) => relay(session, message, out, &tasks).await,
        };
        if let Some(line) = reply {
            if lines.send(line).await.is_err() {
                break Ok(());
            }
        }
    };
    tasks.close();
    if let Some((session, _)) = session {
        legacy.delete(&session.id).await;
    }
    tasks.wait().await;
    result
}

/// Before a session exists: only `initialize` opens one.
async fn open(
    legacy: &Arc<LegacySessions>,
    message: Message,
    session: &mut Option<(Arc<Session>, mpsc::Sender<Message>)>,
    lines: &mpsc::Sender<String>,
) -> Option<String> {
    match message {
        Message::Request { id, method, params } if method == "initialize" => {
            match legacy
                .initialize(
                    id,
                    params,
                    crate::request::Principal::anonymous(),
                    &crate::credentials::Credentials::none(),
                    false,
                )
                .await
            {
                Ok((opened, response)) => {
                    // stdout is the session's one stream: every server message goes there, and
                    // the responses through the same queue (a response never overtakes the
                    // progress sent before it).
                    let (tx, mut rx) = mpsc::channel::<Message>(SINK_CAPACITY);
                    let _ = opened.attach_standalone(tx.clone());
                    let lines = lines.clone();
                    tokio::spawn(async move {
                        while let Some(message) = rx.recv().await {
                            if lines.send(message_line(&message)).await.is_err() {
                                return;
                            }
                        }
                    });
                    *session = Some((opened, tx));
                    Some(message_line(&response))
                }
                Err(refused) => Some(message_line(&refused.response)),
            }
        }
        Message::Request { id, .. } => Some(line_of(&error_response(
            Some(&id),
            &ErrorObject::new(
                codes::INVALID_REQUEST,
                "the session is not initialized: send `initialize` first",
            ),
        ))),
        _ => None,
    }
}

/// Relays one message of an open session; a request runs in its own task, its response goes to
/// `out` (the session's stdout queue).
async fn relay(
    session: &Arc<Session>,
    message: Message,
    out: &mpsc::Sender<Message>,
    tasks: &TaskTracker,
) -> Option<String> {
    let ended_error = || ErrorObject::new(codes::INTERNAL_ERROR, "the legacy session ended");
    let ended = |id: Option<&Value>| line_of(&error_response(id, &ended_error()));
    match message.into_tree() {
        Message::Request { id, method, params } => {
            let session = Arc::clone(session);
            let out = out.clone();
            tasks.spawn(async move {
                let message = match session.request(id.clone(), &method, params, None).await {
                    Ok(Some(message)) => message,
                    Ok(None) => return,
                    Err(RelayError::Ended) => Message::response(id, Err(ended_error())),
                };
                let _ = out.send(message).await;
            });
            None
        }
        Message::Notification { method, params } => session
            .notification(&method, params)
            .await
            .err()
            .map(|_| ended(None)),
        Message::Response { id, outcome } => session
            .response(id, outcome)
            .await
            .err()
            .map(|_| ended(None)),
        Message::RawResponse { id, result } => {
            let outcome = result.to_value().map_err(|error| {
                ErrorObject::new(codes::PARSE_ERROR, format!("unreadable result: {error}"))
            });
            session
                .response(id, outcome)
                .await
                .err()
                .map(|_| ended(None))
        }
        Message::RawRequest { .. } => unreachable!("`into_tree` leaves no raw request"),
    }
}
