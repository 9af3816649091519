//! How both fronts read a client message: a request's `params` kept as the client's text
//! ([`crate::params`]), everything else as [`Message::parse`] reads it. The outcome is the same
//! message, or the same error, as [`Message::parse`]: the raw path is taken only for a request
//! whose envelope and params it reads exactly as a `Value` parse would; anything else (an error,
//! a notification, a response, a `params` that is not an object or that the raw reader leaves to
//! a `Value` parse, two `params` members) is read by [`Message::parse`] itself.

use serde_json::Value;

use crate::jsonrpc::{Message, ParseError};
use crate::params::Params;

/// One client message as the fronts read it.
#[derive(Debug, Clone)]
pub enum FrontMessage {
    Request {
        id: Value,
        method: String,
        params: Option<Params>,
    },
    /// Notifications and responses.
    Other(Message),
}

impl From<Message> for FrontMessage {
    fn from(message: Message) -> Self {
        match message {
            Message::Request { id, method, params } => FrontMessage::Request {
                id,
                method,
                params: params.map(Params::from),
            },
            other => FrontMessage::Other(other),
        }
    }
}

impl FrontMessage {
    /// Reads exactly one message (no batch): [`Message::parse`], with a request's params raw.
    pub fn parse(bytes: &[u8]) -> Result<FrontMessage, ParseError> {
        match read_raw(bytes) {
            Some(message) => Ok(message),
            None => Message::parse(bytes).map(FrontMessage::from),
        }
    }

    /// The message as [`Message::parse`] gives it.
    pub fn into_message(self) -> Message {
        match self {
            FrontMessage::Request { id, method, params } => Message::Request {
                id,
                method,
                params: params.map(Params::into_value),
            },
            FrontMessage::Other(message) => message,
        }
    }

    pub fn is_request(&self) -> bool {
        matches!(self, FrontMessage::Request { .. })
    }

    /// The method of a request or a notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            FrontMessage::Request { method, .. }
            | FrontMessage::Other(Message::Notification { method, .. }) => Some(method),
            FrontMessage::Other(_) => None,
        }
    }
}

/// The raw path: a well-formed request with object params (or none) the raw reader takes.
fn read_raw(bytes: &[u8]) -> Option<FrontMessage> {
    let (id, method, params) = Params::read_request(bytes)?;
    Some(FrontMessage::Request { id, method, params })
}
