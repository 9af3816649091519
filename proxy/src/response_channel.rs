//! One request's response channel: what the engine sends back ([`Outgoing`]) to the front that
//! answers the client.
//!
//! Most requests are answered with one message and nothing before it, so a channel starts as a
//! one-shot hand-over of that message, and becomes a queue ([`SINK_CAPACITY`] items, the engine
//! waiting when it is full) only when a notification comes first: the first notification hands
//! the queue's receiving end over, and everything after it goes through the queue. A queue per
//! request cost ~1.5k instructions per call (its shared state and first block allocated, a
//! semaphore on every send; callgrind, bench/proxy-vs-nginx.md); the hand-over costs a fraction.
//!
//! Either end sees the other go: the sender's [`OutgoingSender::closed`] resolves once the
//! receiver is dropped (the client went away), the receiver's [`OutgoingReceiver::recv`] gives
//! `None` once the sender is dropped without a final response.

use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::{mpsc, oneshot};

use crate::front::SINK_CAPACITY;
use crate::request::Outgoing;

/// What the one-shot hand-over carries.
#[derive(Debug)]
enum First {
    /// The final response, with nothing before it.
    Only(Outgoing),
    /// A notification, and the queue the rest comes through.
    Stream(Outgoing, mpsc::Receiver<Outgoing>),
}

impl First {
    /// The item it carries (what a failed hand-over gives back).
    fn into_item(self) -> Outgoing {
        match self {
            First::Only(item) | First::Stream(item, _) => item,
        }
    }
}

/// A new response channel.
pub fn response_channel() -> (OutgoingSender, OutgoingReceiver) {
    let (tx, rx) = oneshot::channel();
    (
        OutgoingSender(SenderState::First(Some(tx))),
        OutgoingReceiver(ReceiverState::First(rx)),
    )
}

/// The engine's end.
#[derive(Debug)]
pub struct OutgoingSender(SenderState);

#[derive(Debug)]
enum SenderState {
    /// Nothing sent yet (`None` once the final response went).
    First(Option<oneshot::Sender<First>>),
    /// A notification went: the rest goes through the queue.
    Stream(mpsc::Sender<Outgoing>),
}

impl OutgoingSender {
    /// Sends `item`; `Err` with it when the receiver is gone (or after a final response).
    pub async fn send(&mut self, item: Outgoing) -> Result<(), Outgoing> {
        match &mut self.0 {
            SenderState::First(slot) => {
                let Some(tx) = slot.take() else {
                    return Err(item);
                };
                let queue = match item {
                    Outgoing::Notification(_) => {
                        let (queue, rest) = mpsc::channel(SINK_CAPACITY);
                        tx.send(First::Stream(item, rest))
                            .map_err(First::into_item)?;
                        queue
                    }
                    Outgoing::Final { .. } => {
                        return tx.send(First::Only(item)).map_err(First::into_item)
                    }
                };
                self.0 = SenderState::Stream(queue);
                Ok(())
            }
            SenderState::Stream(queue) => queue.send(item).await.map_err(|error| error.0),
        }
    }

    /// Resolves when the receiver is gone (at once after a final response).
    pub async fn closed(&mut self) {
        match &mut self.0 {
            SenderState::First(Some(tx)) => tx.closed().await,
            SenderState::First(None) => {}
            SenderState::Stream(queue) => queue.closed().await,
        }
    }

    pub fn is_closed(&self) -> bool {
        match &self.0 {
            SenderState::First(Some(tx)) => tx.is_closed(),
            SenderState::First(None) => true,
            SenderState::Stream(queue) => queue.is_closed(),
        }
    }
}

/// The front's end.
#[derive(Debug)]
pub struct OutgoingReceiver(ReceiverState);

#[derive(Debug)]
enum ReceiverState {
    First(oneshot::Receiver<First>),
    Stream(mpsc::Receiver<Outgoing>),
    /// The final response came, or the sender is gone.
    Done,
}

/// A queue from the start (the legacy sessions' relays, which stream by nature).
impl From<mpsc::Receiver<Outgoing>> for OutgoingReceiver {
    fn from(queue: mpsc::Receiver<Outgoing>) -> Self {
        OutgoingReceiver(ReceiverState::Stream(queue))
    }
}

impl OutgoingReceiver {
    /// The next item; `None` once the sender is gone (after a final response from the one-shot
    /// hand-over too).
    pub async fn recv(&mut self) -> Option<Outgoing> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Outgoing>> {
        match &mut self.0 {
            ReceiverState::First(rx) => match Pin::new(rx).poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Ok(First::Only(item))) => {
                    self.0 = ReceiverState::Done;
                    Poll::Ready(Some(item))
                }
                Poll::Ready(Ok(First::Stream(item, queue))) => {
                    self.0 = ReceiverState::Stream(queue);
                    Poll::Ready(Some(item))
                }
                Poll::Ready(Err(_)) => {
                    self.0 = ReceiverState::Done;
                    Poll::Ready(None)
                }
            },
            ReceiverState::Stream(queue) => queue.poll_recv(cx),
            ReceiverState::Done => Poll::Ready(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Message;
    use serde_json::json;

    fn note(n: u64) -> Outgoing {
        Outgoing::Notification(Message::notification(
            "notifications/progress",
            json!({"progress": n}),
        ))
    }

    fn last(n: u64) -> Outgoing {
        Outgoing::Final {
            message: Message::response(json!(n), Ok(json!({}))),
            http_status: 200,
        }
    }

    fn progress(item: &Outgoing) -> Option<u64> {
        match item {
            Outgoing::Notification(Message::Notification { params, .. }) => {
                params.as_ref()?["progress"].as_u64()
            }
            _ => None,
        }
    }

    #[tokio::test]
    async fn a_final_response_alone_goes_through_the_hand_over() {
        let (mut tx, mut rx) = response_channel();
        tx.send(last(1)).await.unwrap();
        assert!(matches!(rx.recv().await, Some(Outgoing::Final { .. })));
        assert!(rx.recv().await.is_none());
        // Nothing goes after a final response.
        assert!(tx.send(note(2)).await.is_err());
    }

    #[tokio::test]
    async fn notifications_first_turn_the_channel_into_a_queue_in_order() {
        let (mut tx, mut rx) = response_channel();
        for n in 0..(SINK_CAPACITY as u64 + 5) {
            // More than the queue holds: the sender waits for the receiver.
            let sent = tokio::select! {
                sent = tx.send(note(n)) => sent,
                item = rx.recv() => panic!("nothing to receive before sending: {item:?}"),
            };
            assert!(sent.is_ok());
            assert_eq!(rx.recv().await.as_ref().and_then(progress), Some(n));
        }
        tx.send(last(9)).await.unwrap();
        assert!(matches!(rx.recv().await, Some(Outgoing::Final { .. })));
        drop(tx);
        assert!(rx.recv().await.is_none());
    }

    #[tokio::test]
    async fn a_full_queue_makes_the_sender_wait() {
        let (mut tx, mut rx) = response_channel();
        for n in 0..=SINK_CAPACITY as u64 {
            tx.send(note(n)).await.unwrap();
        }
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(50), tx.send(note(999))).await;
        assert!(waited.is_err(), "the queue holds SINK_CAPACITY items");
        assert_eq!(rx.recv().await.as_ref().and_then(progress), Some(0));
    }

    #[tokio::test]
    async fn the_sender_sees_the_receiver_go_in_either_state() {
        let (mut tx, rx) = response_channel();
        assert!(!tx.is_closed());
        drop(rx);
        tx.closed().await;
        assert!(tx.is_closed());
        assert!(tx.send(last(1)).await.is_err());

        let (mut tx, mut rx) = response_channel();
        tx.send(note(1)).await.unwrap();
        assert!(rx.recv().await.is_some());
        drop(rx);
        tx.closed().await;
        assert!(tx.is_closed());
        assert!(tx.send(note(2)).await.is_err());
    }

    #[tokio::test]
    async fn the_receiver_sees_the_sender_go_in_either_state() {
        let (tx, mut rx) = response_channel();
        drop(tx);
        assert!(rx.recv().await.is_none());

        let (mut tx, mut rx) = response_channel();
        tx.send(note(1)).await.unwrap();
        drop(tx);
        assert!(rx.recv().await.is_some());
        assert!(rx.recv().await.is_none());
    }

    #[tokio::test]
    async fn a_queue_from_the_start_reads_as_one() {
        let (queue, rest) = mpsc::channel(4);
        let mut rx = OutgoingReceiver::from(rest);
        queue.send(note(3)).await.unwrap();
        drop(queue);
        assert_eq!(rx.recv().await.as_ref().and_then(progress), Some(3));
        assert!(rx.recv().await.is_none());
    }
}
