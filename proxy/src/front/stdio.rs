//! The stdio front (2026-07-28): newline-delimited JSON-RPC on the proxy's stdin/stdout.
//!
//! - Each line is one message. Requests are validated (no headers on stdio) and run
//!   concurrently, one handler task each; one writer task serialises everything that goes out,
//!   one JSON object per line, so notifications and final responses of different requests
//!   interleave but never mix within a line.
//! - `notifications/cancelled {requestId}` drops that request's receiver (the engine's
//!   [`crate::request::ResponseSink::closed`] resolves) and nothing more is written for it.
//! - Unreadable lines get a JSON-RPC error without an `id` (2026-07-28's `RequestId` cannot be
//!   `null`); invalid requests get their error with their id; invalid notifications and
//!   responses from the client are logged and dropped (notifications are never answered).
//! - At most `max_concurrent_requests` requests run at once (`--max-concurrent-requests`, as on
//!   HTTP); one more gets the same `-32000` overload error with its id, at once.
//! - EOF on stdin stops reading; requests in flight still finish unless `shutdown` is cancelled,
//!   which stops everything at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use super::http::{handler_gone, start_handler};
use super::read::FrontMessage;
use super::validate::{self, error_response, Rejection, Validated};
use crate::jsonrpc::{codes, ErrorObject, Message, ParseError};
use crate::legacy_session::{era, Era, EraPolicy, LegacySessions};
use crate::limits::RequestGate;
use crate::request::{Handler, Outgoing, Principal, ResponseSink};
use crate::response_channel::{response_channel, OutgoingReceiver};

/// Longer lines are refused (`-32600`) and skipped.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// How long queued output may take to drain once everything else has stopped.
const WRITER_DRAIN: Duration = Duration::from_secs(5);

/// Serves the stdio front until stdin ends (then waits for requests in flight) or `shutdown` is
/// cancelled (then drops them). Errors: reading stdin, or writing stdout.
pub async fn serve_stdio<R, W>(
    mut reader: R,
    writer: W,
    handler: Arc<dyn Handler>,
    legacy: Option<Arc<LegacySessions>>,
    max_concurrent_requests: usize,
    shutdown: CancellationToken,
) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // Cancelled by `shutdown`, and by a failed write: nobody is listening any more.
    let stop = shutdown.child_token();
    let (lines, line_rx) = mpsc::channel::<String>(256);
    let writer_task = tokio::spawn(write_lines(writer, line_rx, stop.clone()));
    let in_flight: InFlightTable = Arc::default();
    let gate = RequestGate::new(max_concurrent_requests);
    let forwarders = TaskTracker::new();
    let mut generation = 0u64;
    let mut buffer = Vec::new();
    // The first message decides the era for the whole process.
    let legacy =
        legacy.filter(|legacy| legacy.policy().serves_legacy() || !legacy.policy().serves_modern());
    let mut first = true;

    let read_result = loop {
        let line = tokio::select! {
            biased;
            () = stop.cancelled() => break Ok(()),
            line = read_line(&mut reader, &mut buffer, MAX_LINE_BYTES) => line,
        };
        let outgoing = match line {
            Err(error) => break Err(error),
            Ok(Line::Eof) => break Ok(()),
            Ok(Line::TooLong) => Some(error_response(
                None,
                &ErrorObject::new(
                    codes::INVALID_REQUEST,
                    format!("line longer than {MAX_LINE_BYTES} bytes"),
                ),
            )),
            Ok(Line::Complete) => {
                let Some(parsed) = parse_front_line(&buffer) else {
                    continue;
                };
                match parsed {
                    Err(error) => {
                        let rejection = Rejection::unreadable(&error);
                        crate::metrics::global()
                            .rejection(crate::metrics::validation_reason(rejection.error.code));
                        Some(rejection.to_value())
                    }
                    Ok(message) => {
                        if let Some(legacy) = &legacy {
                            let opening = std::mem::take(&mut first);
                            if opening
                                && legacy.policy().serves_legacy()
                                && era::first_front_era(&message) == Era::Legacy
                            {
                                break super::stdio_legacy::serve(
                                    legacy,
                                    message.into_message(),
                                    &mut reader,
                                    &mut buffer,
                                    &lines,
                                    &stop,
                                )
                                .await;
                            }
                            if !legacy.policy().serves_modern() {
                                crate::metrics::global().rejection("era_policy");
                                let id = match &message {
                                    FrontMessage::Request { id, .. } => Some(id),
                                    _ => None,
                                };
                                let refusal = error_response(id, &EraPolicy::modern_refusal());
                                if lines.send(line_of(&refusal)).await.is_err() {
                                    break Ok(());
                                }
                                continue;
                            }
                        }
                        let context = Context {
                            handler: handler.as_ref(),
                            lines: &lines,
                            in_flight: &in_flight,
                            gate: &gate,
                            forwarders: &forwarders,
                            stop: &stop,
                        };
                        generation += 1;
                        context.accept(message, generation)
                    }
                }
            }
        };
        if let Some(value) = outgoing {
            if lines.send(line_of(&value)).await.is_err() {
                break Ok(());
            }
        }
    };

    drop(lines);
    forwarders.close();
    if read_result.is_ok() {
        tokio::select! {
            () = forwarders.wait() => {}
            () = stop.cancelled() => {}
        }
    }
    // Whatever is still running is dropped: its receivers close, nothing more is written.
    stop.cancel();
    forwarders.wait().await;
    let write_result = match tokio::time::timeout(WRITER_DRAIN, writer_task).await {
        Ok(Ok(result)) => result,
        Ok(Err(join_error)) => Err(std::io::Error::other(join_error)),
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "stdout did not drain",
        )),
    };
    read_result.and(write_result)
}

/// Requests in flight by id (canonical JSON of the id: `1` and `"1"` differ).
type InFlightTable = Arc<Mutex<HashMap<String, InFlight>>>;

struct InFlight {
    /// Tells a finished forwarder's entry from a newer request that reused the id.
    generation: u64,
    cancel: CancellationToken,
}

fn lock(table: &InFlightTable) -> std::sync::MutexGuard<'_, HashMap<String, InFlight>> {
    table.lock().unwrap_or_else(PoisonError::into_inner)
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

pub(super) fn line_of(value: &Value) -> String {
    let mut line = value.to_string();
    line.push('\n');
    line
}

struct Context<'a> {
    handler: &'a dyn Handler,
    lines: &'a mpsc::Sender<String>,
    in_flight: &'a InFlightTable,
    gate: &'a RequestGate,
    forwarders: &'a TaskTracker,
    stop: &'a CancellationToken,
}

impl Context<'_> {
    /// Handles one parsed message; returns the error to write, if any.
    fn accept(&self, message: FrontMessage, generation: u64) -> Option<Value> {
        let is_request = message.is_request();
        let validated = match validate::validate_front(message, None, Principal::anonymous()) {
            Ok(validated) => validated,
            Err(rejection) if is_request => {
                crate::metrics::global()
                    .rejection(crate::metrics::validation_reason(rejection.error.code));
                tracing::debug!(code = rejection.error.code, message = %rejection.error.message, "rejected a request");
                return Some(rejection.to_value());
            }
            Err(rejection) => {
                tracing::warn!(message = %rejection.error.message, "ignored a client message");
                return None;
            }
        };
        match validated {
            Validated::Cancelled { request_id, reason } => {
                let entry = lock(self.in_flight).remove(&id_key(&request_id));
                match entry {
                    Some(entry) => {
                        tracing::debug!(id = %request_id, reason = reason.as_deref().unwrap_or(""), "request cancelled");
                        entry.cancel.cancel();
                    }
                    None => {
                        tracing::debug!(id = %request_id, "cancellation for no request in flight")
                    }
                }
                None
            }
            Validated::OtherNotification { method } => {
                tracing::debug!(%method, "ignored a notification");
                None
            }
            Validated::Request(request) => {
                let id = request.id.clone();
                let key = id_key(&id);
                let cancel = self.stop.child_token();
                let permit = {
                    let mut table = lock(self.in_flight);
                    if table.contains_key(&key) {
                        return Some(error_response(
                            Some(&id),
                            &ErrorObject::new(
                                codes::INVALID_REQUEST,
                                "a request with this id is already in flight",
                            ),
                        ));
                    }
                    let Some(permit) = self.gate.try_enter() else {
                        crate::metrics::global().rejection("limit_concurrent_requests");
                        tracing::warn!(
                            max = self.gate.max(),
                            "refused a request: too many requests running (--max-concurrent-requests)"
                        );
                        return Some(error_response(Some(&id), &self.gate.overload_error()));
                    };
                    table.insert(
                        key.clone(),
                        InFlight {
                            generation,
                            cancel: cancel.clone(),
                        },
                    );
                    permit
                };
                let span = crate::telemetry::request_span(&request, "stdio");
                let (tx, rx) = response_channel();
                let sink = ResponseSink::new(tx).observed(&request.method);
                start_handler(self.handler, request, sink, span.clone(), false);
                let forwarder = Forwarder {
                    rx,
                    id,
                    key,
                    generation,
                    lines: self.lines.clone(),
                    cancel,
                    in_flight: self.in_flight.clone(),
                    permit: Some(permit),
                };
                self.forwarders.spawn(forwarder.run().instrument(span));
                None
            }
        }
    }
}

/// Copies one request's outgoing items to the shared line channel, until its final response or
/// its cancellation.
struct Forwarder {
    rx: OutgoingReceiver,
    id: Value,
    key: String,
    generation: u64,
    lines: mpsc::Sender<String>,
    cancel: CancellationToken,
    in_flight: InFlightTable,
    /// This request's place under `--max-concurrent-requests`.
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Forwarder {
    async fn run(mut self) {
        loop {
            let item = tokio::select! {
                biased;
                () = self.cancel.cancelled() => break,
                item = self.rx.recv() => item,
            };
            let (message, last) = match item {
                Some(Outgoing::Notification(message)) => (message, false),
                Some(Outgoing::Final { message, .. }) => (message, true),
                None => (
                    Message::response(self.id.clone(), Err(handler_gone())),
                    true,
                ),
            };
            if last {
                // Before the final line goes out, so the client may reuse the id at once.
                self.forget();
            }
            let sent = tokio::select! {
                biased;
                () = self.cancel.cancelled() => false,
                sent = self.lines.send(message.to_line() + "\n") => sent.is_ok(),
            };
            if !sent || last {
                break;
            }
        }
        self.forget();
        // Dropping `self.rx` here closes the engine's sink.
    }

    fn forget(&mut self) {
        self.permit.take();
        let mut table = lock(&self.in_flight);
        if table
            .get(&self.key)
            .is_some_and(|entry| entry.generation == self.generation)
        {
            table.remove(&self.key);
        }
    }
}

/// The single writer: one line per message, flushed whenever the queue runs empty.
async fn write_lines<W>(
    mut writer: W,
    mut lines: mpsc::Receiver<String>,
    stop: CancellationToken,
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let result = async {
        while let Some(line) = lines.recv().await {
            writer.write_all(line.as_bytes()).await?;
            while let Ok(line) = lines.try_recv() {
                writer.write_all(line.as_bytes()).await?;
            }
            writer.flush().await?;
        }
        writer.flush().await
    }
    .await;
    if let Err(error) = &result {
        tracing::warn!(%error, "writing to stdout failed");
        stop.cancel();
    }
    result
}

/// One complete line (without its `\n`) as a message: a trailing `\r` is dropped, a blank line
/// is `None` (skipped), anything else is parsed as exactly one JSON-RPC message.
pub(crate) fn parse_line(line: &[u8]) -> Option<Result<Message, ParseError>> {
    line_text(line).map(Message::parse)
}

/// [`parse_line`] as the modern front reads a message ([`FrontMessage::parse`]).
pub(crate) fn parse_front_line(line: &[u8]) -> Option<Result<FrontMessage, ParseError>> {
    line_text(line).map(FrontMessage::parse)
}

/// The text of a line: without a trailing `\r`; `None` when blank.
fn line_text(line: &[u8]) -> Option<&[u8]> {
    let text = line.strip_suffix(b"\r").unwrap_or(line);
    if text.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(text)
}

pub(crate) enum Line {
    /// `buffer` holds the line, without its `\n`.
    Complete,
    /// The line exceeded the limit; it was skipped up to its `\n`.
    TooLong,
    Eof,
}

/// Reads one `\n`-terminated line (or the last, unterminated one) into `buffer`, keeping at most
/// `max` bytes in memory.
pub(crate) async fn read_line<R>(
    reader: &mut R,
    buffer: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line>
where
    R: AsyncBufRead + Unpin,
{
    buffer.clear();
    let mut too_long = false;
    let mut seen_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (seen_any, too_long) {
                (false, _) => Line::Eof,
                (true, true) => Line::TooLong,
                (true, false) => Line::Complete,
            });
        }
        seen_any = true;
        let newline = available.iter().position(|&byte| byte == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if !too_long {
            if buffer.len() + chunk.len() > max {
                too_long = true;
                buffer.clear();
            } else {
                buffer.extend_from_slice(chunk);
            }
        }
        let consumed = newline.map_or(available.len(), |at| at + 1);
        reader.consume(consumed);
        if newline.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(input: &[u8], max: usize) -> Vec<Result<String, &'static str>> {
        let mut reader = tokio::io::BufReader::with_capacity(4, input);
        let mut buffer = Vec::new();
        let mut out = Vec::new();
        loop {
            match read_line(&mut reader, &mut buffer, max).await.unwrap() {
                Line::Eof => return out,
                Line::TooLong => out.push(Err("too long")),
                Line::Complete => out.push(Ok(String::from_utf8(buffer.clone()).unwrap())),
            }
        }
    }

    #[tokio::test]
    async fn lines_are_split_and_bounded() {
        assert_eq!(
            lines_of(b"ab\n\ncdefgh\nij\r\nklm", 5).await,
            vec![
                Ok("ab".into()),
                Ok("".into()),
                Err("too long"),
                Ok("ij\r".into()),
                Ok("klm".into())
            ]
        );
        assert_eq!(lines_of(b"", 5).await, vec![]);
        assert_eq!(lines_of(b"abcdefgh", 5).await, vec![Err("too long")]);
        assert_eq!(lines_of(b"abcde\n", 5).await, vec![Ok("abcde".into())]);
    }
}
