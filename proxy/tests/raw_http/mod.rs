//! A raw HTTP/1.1 request reader for test servers that answer with hand-written bytes (shared by
//! `backend_http_malformed.rs` and the unit tests of `backend/call_http`).
// Each includer uses a part of it.
#![allow(dead_code)]

use tokio::io::AsyncReadExt as _;
use tokio::net::TcpStream;

/// One request as it came off the wire.
pub struct RawRequest {
    /// Head and body, as sent.
    pub bytes: Vec<u8>,
    head_end: usize,
}

impl RawRequest {
    /// The head, lower-cased.
    pub fn head(&self) -> String {
        String::from_utf8_lossy(&self.bytes[..self.head_end]).to_ascii_lowercase()
    }

    /// The body (`Content-Length` bytes after the head).
    pub fn body(&self) -> &[u8] {
        &self.bytes[self.head_end + 4..]
    }
}

/// Reads one request (head and `Content-Length` body); `None` when the client closed.
pub async fn read_request(stream: &mut TcpStream) -> Option<RawRequest> {
    let mut bytes = Vec::new();
    let mut more = [0u8; 4096];
    loop {
        if let Some(head_end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&bytes[..head_end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length: "))
                .map_or(0, |value| value.trim().parse().unwrap());
            while bytes.len() < head_end + 4 + length {
                let n = stream.read(&mut more).await.ok()?;
                if n == 0 {
                    return None;
                }
                bytes.extend_from_slice(&more[..n]);
            }
            bytes.truncate(head_end + 4 + length);
            return Some(RawRequest { bytes, head_end });
        }
        let n = stream.read(&mut more).await.ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&more[..n]);
    }
}
