//! A lean HTTP/1.1 client for the POSTs of one HTTP lane: our requests, responses and
//! notifications to the legacy server.
//!
//! Why not hyper here: the POST of a call that paused stays open for as long as its person takes
//! to answer (the legacy server sent its `elicitation/create` on that response stream and will
//! send the result there too), and a paused call is parked by the thousand. A hyper connection
//! costs about 28 KiB however idle it is (its dispatch channel, an 8 KiB header buffer, a read
//! buffer that starts at 8 KiB and never shrinks; bench/paused-calls.md). Here an open response
//! holds its socket, a few framing fields and the bytes of an unfinished chunk, nothing more: the
//! read buffer is released whenever it is empty and the body waits for the server.
//!
//! What it speaks: a request with `Content-Length` (one write); a response head parsed by
//! `httparse` (`1xx` heads skipped; of its fields, the framing ones and [`READ_HEADERS`] are
//! read, the others skipped); a body framed by `Content-Length`, `chunked` (chunk sizes
//! parsed by `httparse`, extensions and trailers skipped) or the end of the connection. The
//! connection is kept for the next POST once its response body was read to the end (HTTP/1.1
//! without `Connection: close`), as [`super::http_client`] does for hyper's connections; a kept
//! connection the server closed meanwhile is noticed before it is reused.
//!
//! Delayed ACKs: whenever a response is incomplete and the connection waits for the rest,
//! `TCP_QUICKACK` is set, which also sends the ACK the kernel was holding, so a legacy server with
//! Nagle's algorithm on does not hold its next segment for 40 ms (see
//! [`super::http_client::quickack`]). A response that arrives whole needs no ACK from us before
//! the next request (which carries it): no system call for it.
//!
//! Malformed or truncated input (a bad head, a bad chunk size, a missing CRLF, a connection that
//! ends mid-body) is an `io::Error` from the body (`InvalidData`, `UnexpectedEof`), never a panic;
//! every line buffered while waiting is bounded.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf as _, Bytes, BytesMut};
use http::header::{CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode, Uri};
use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::http_client::{quickack, ClientError, MAX_KEPT};
use super::lock;
use crate::idle_clock::IdleStamp;

/// Bytes asked of the socket per read once a response needs more than [`FIRST_READ`].
const READ_CHUNK: usize = 8 * 1024;
/// The read buffer of a response, at first: a head and a usual JSON-RPC answer fit, and jemalloc
/// serves up to 4 KiB from its thread cache's fast path (8 KiB took its slow path: ~540
/// instructions against ~100; callgrind, bench/proxy-vs-nginx.md).
const FIRST_READ: usize = 4 * 1024;
/// The largest response head.
const MAX_HEAD: usize = 64 * 1024;
/// The most header fields in a response head.
const MAX_HEADERS: usize = 64;
/// The longest chunk-size or trailer line.
const MAX_LINE: usize = 4 * 1024;
/// Bodies larger than this are written after the head rather than copied next to it.
pub(crate) const COPY_BODY_UP_TO: usize = 16 * 1024;
/// The response header fields the lane reads (`backend/http/`: the body's type, the challenge
/// of a refusal, and for an `initialize` only ([`WireRequest::reading_session_id`]) the session it
/// opened), besides the framing ones read here. Only these are kept in the response's header
/// map: building a map of every field (`Date`, `Cache-Control`, `Keep-Alive`, ...) cost more than
/// the rest of the head's parsing (callgrind, bench/proxy-vs-nginx.md).
const READ_HEADERS: [HeaderName; 3] = [
    CONTENT_TYPE,
    WWW_AUTHENTICATE,
    HeaderName::from_static("mcp-session-id"),
];

/// The POST connections of one lane to its legacy server.
pub(crate) struct CallConnections {
    pool: Arc<Pool>,
}

struct Pool {
    /// Host name or IP address (IPv6 without brackets).
    host: String,
    port: u16,
    connect_timeout: Duration,
    idle_timeout: Duration,
    idle: Mutex<Vec<Idle>>,
}

struct Idle {
    stream: TcpStream,
    since: IdleStamp,
}

impl CallConnections {
    /// Connections to `uri`'s authority (`http` only: the caller checked the scheme).
    pub(crate) fn new(uri: &Uri, connect_timeout: Duration, idle_timeout: Duration) -> Self {
        let host = uri.host().unwrap_or("localhost");
        let host = host
            .strip_prefix('[')
            .and_then(|host| host.strip_suffix(']'))
            .unwrap_or(host)
            .to_owned();
        CallConnections {
            pool: Arc::new(Pool {
                host,
                port: uri.port_u16().unwrap_or(80),
                connect_timeout,
                idle_timeout,
                idle: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Sends `request` (origin-form URI, `Host` set by the caller) and reads the response head;
    /// the body streams from the returned response.
    #[cfg(test)]
    pub(crate) async fn request(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<Response<CallBody>, ClientError> {
        self.send(encode(&request)).await
    }

    /// Sends a request already written for the wire ([`RequestHead`]) and reads the response
    /// head; the body streams from the returned response.
    pub(crate) async fn send(
        &self,
        request: WireRequest,
    ) -> Result<Response<CallBody>, ClientError> {
        let WireRequest {
            head,
            body,
            reads_session_id,
        } = request;
        let read = if reads_session_id {
            &READ_HEADERS[..]
        } else {
            &READ_HEADERS[..2]
        };
        let mut stream = match self.pool.take_idle() {
            Some(stream) => stream,
            None => self.pool.connect().await?,
        };
        stream.write_all(&head).await?;
        if let Some(body) = body {
            stream.write_all(&body).await?;
        }
        let mut buf = BytesMut::new();
        loop {
            if let Some((head, used)) = parse_head(&buf, read)? {
                buf.advance(used);
                if head.status.is_informational() {
                    continue;
                }
                return Ok(head.into_response(stream, buf, Arc::downgrade(&self.pool)));
            }
            if buf.len() > MAX_HEAD {
                return Err(invalid("the response head is too large").into());
            }
            if !buf.is_empty() {
                // Part of the head came and the rest is awaited: acknowledge it now.
                quickack(&stream);
            }
            room_to_read(&mut buf);
            if stream.read_buf(&mut buf).await? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the connection closed before the response head",
                )
                .into());
            }
        }
    }

    /// Connections kept for reuse (idle).
    #[cfg(test)]
    fn idle(&self) -> usize {
        lock(&self.pool.idle).len()
    }
}

/// Makes room in `buf` for the next read. An empty buffer gets a new allocation of
/// [`FIRST_READ`] at once (growing an empty `BytesMut` costs more than the allocation itself);
/// a fuller one grows by [`READ_CHUNK`].
fn room_to_read(buf: &mut BytesMut) {
    if buf.is_empty() {
        if buf.capacity() < FIRST_READ / 2 {
            *buf = BytesMut::with_capacity(FIRST_READ);
        }
    } else if buf.capacity() - buf.len() < FIRST_READ / 2 {
        buf.reserve(READ_CHUNK);
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

impl Pool {
    /// The most recently kept connection that is still open and not idle too long.
    fn take_idle(&self) -> Option<TcpStream> {
        let mut idle = lock(&self.idle);
        while let Some(kept) = idle.pop() {
            if kept.since.elapsed() > self.idle_timeout {
                continue;
            }
            // An idle connection has nothing to read: anything else (the server's FIN, a reset,
            // stray bytes) means it cannot carry another exchange.
            match kept.stream.try_read(&mut [0u8; 1]) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    return Some(kept.stream)
                }
                _ => continue,
            }
        }
        None
    }

    fn keep(&self, stream: TcpStream) {
        let mut idle = lock(&self.idle);
        idle.retain(|kept| kept.since.elapsed() <= self.idle_timeout);
        if idle.len() < MAX_KEPT {
            idle.push(Idle {
                stream,
                since: IdleStamp::now(),
            });
        }
    }

    async fn connect(&self) -> Result<TcpStream, ClientError> {
        let connect = TcpStream::connect((self.host.as_str(), self.port));
        let stream = match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => return Err(ClientError::Connect(Box::new(error))),
            Err(_) => {
                return Err(ClientError::Connect(
                    format!("no connection within {:?}", self.connect_timeout).into(),
                ))
            }
        };
        // Best effort, as for hyper's connections (http_client.rs: `QuickAckIo`).
        let _ = stream.set_nodelay(true);
        quickack(&stream);
        Ok(stream)
    }
}

/// A request as it goes on the wire: its head (with the body when small), and the body to write
/// after it when large.
pub(crate) struct WireRequest {
    head: Vec<u8>,
    body: Option<Bytes>,
    /// Whether the response's `Mcp-Session-Id` is read.
    reads_session_id: bool,
}

impl WireRequest {
    /// The response's `Mcp-Session-Id` is read too (an `initialize`: the session it opened).
    pub(crate) fn reading_session_id(mut self) -> WireRequest {
        self.reads_session_id = true;
        self
    }
}

/// A request head being written: the request line and header fields as bytes, with no map in
/// between (a lane writes the fields of its POSTs, the same on every request of a session, from
/// bytes it keeps: backend/http/post.rs).
pub(crate) struct RequestHead(Vec<u8>);

impl RequestHead {
    /// A head starting with `start`: the request line and any fields already written
    /// (`name: value` lines, each ended by CRLF); room for `extra` more bytes and a small body.
    pub(crate) fn new(start: &[u8], extra: usize) -> RequestHead {
        let mut head = Vec::with_capacity(start.len() + extra + 64);
        head.extend_from_slice(start);
        RequestHead(head)
    }

    /// The request line of `method` to `target` (origin form).
    pub(crate) fn request_line(method: &str, target: &str) -> Vec<u8> {
        [method.as_bytes(), b" ", target.as_bytes(), b" HTTP/1.1\r\n"].concat()
    }

    /// The bytes written so far.
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// Appends a header field. The name and value are valid ones (`HeaderName`,
    /// `HeaderValue`): no CR or LF can end up inside a field.
    pub(crate) fn field(&mut self, name: &HeaderName, value: &HeaderValue) {
        self.0.extend_from_slice(name.as_str().as_bytes());
        self.0.extend_from_slice(b": ");
        self.0.extend_from_slice(value.as_bytes());
        self.0.extend_from_slice(b"\r\n");
    }

    /// The request with `body` (its `Content-Length` written here).
    pub(crate) fn finish(mut self, body: Bytes) -> WireRequest {
        let head = &mut self.0;
        head.extend_from_slice(b"content-length: ");
        head.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
        head.extend_from_slice(b"\r\n\r\n");
        if body.len() <= COPY_BODY_UP_TO {
            head.extend_from_slice(&body);
            WireRequest {
                head: self.0,
                body: None,
                reads_session_id: false,
            }
        } else {
            WireRequest {
                head: self.0,
                body: Some(body),
                reads_session_id: false,
            }
        }
    }
}

/// `request` for the wire (its own `Content-Length` and `Transfer-Encoding` fields dropped: the
/// body's length is written).
#[cfg(test)]
fn encode(request: &http::Request<Bytes>) -> WireRequest {
    use http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
    let body = request.body();
    let target = request
        .uri()
        .path_and_query()
        .map_or("/", |path| path.as_str());
    let start = RequestHead::request_line(request.method().as_str(), target);
    let mut head = RequestHead::new(&start, 256 + body.len().min(COPY_BODY_UP_TO));
    for (name, value) in request.headers() {
        if name != CONTENT_LENGTH && name != TRANSFER_ENCODING {
            head.field(name, value);
        }
    }
    head.finish(body.clone())
}

/// A parsed response head.
struct Head {
    status: StatusCode,
    headers: HeaderMap,
    framing: Framing,
    keep_alive: bool,
}

/// The response head at the start of `buf` and its length, `None` while incomplete; of the
/// fields besides the framing ones, those named in `read` are kept.
fn parse_head(buf: &[u8], read: &[HeaderName]) -> io::Result<Option<(Head, usize)>> {
    if buf.is_empty() {
        return Ok(None);
    }
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut fields);
    let used = match response.parse(buf) {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(error) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad response head: {error}"),
            ))
        }
    };
    let status = response
        .code
        .and_then(|code| StatusCode::from_u16(code).ok())
        .ok_or_else(|| invalid("bad response status"))?;
    // The framing fields are read here; of the others, only those the lane reads go into the
    // response's header map (see `READ_HEADERS`).
    let mut headers = HeaderMap::new();
    let mut close = false;
    // The last `Transfer-Encoding` value, when there is one.
    let mut transfer_encoding: Option<&[u8]> = None;
    let mut content_length: Option<Option<u64>> = None;
    for field in response.headers.iter() {
        let name = field.name.as_bytes();
        if name.eq_ignore_ascii_case(b"connection") {
            close |= has_token(field.value, "close");
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            transfer_encoding = Some(field.value);
        } else if name.eq_ignore_ascii_case(b"content-length") {
            let mut length = content_length.flatten();
            for part in std::str::from_utf8(field.value)
                .map_err(|_| invalid("bad Content-Length"))?
                .split(',')
            {
                let part: u64 = part
                    .trim()
                    .parse()
                    .map_err(|_| invalid("bad Content-Length"))?;
                if length.is_some_and(|length| length != part) {
                    return Err(invalid("conflicting Content-Length values"));
                }
                length = Some(part);
            }
            content_length = Some(length);
        } else if let Some(read) = read
            .iter()
            .find(|read| name.eq_ignore_ascii_case(read.as_str().as_bytes()))
        {
            let value = HeaderValue::from_bytes(field.value)
                .map_err(|_| invalid("bad response header value"))?;
            headers.append(read.clone(), value);
        }
    }
    let http11 = response.version == Some(1);
    let mut keep_alive = http11 && !close;
    let framing = if status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
        || status.is_informational()
    {
        Framing::Length(0)
    } else if let Some(value) = transfer_encoding {
        let chunked = value
            .rsplit(|&byte| byte == b',')
            .next()
            .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        if chunked {
            Framing::Chunked(Chunk::Size)
        } else {
            keep_alive = false;
            Framing::UntilClose
        }
    } else if let Some(length) = content_length {
        Framing::Length(length.unwrap_or(0))
    } else {
        keep_alive = false;
        Framing::UntilClose
    };
    Ok(Some((
        Head {
            status,
            headers,
            framing,
            keep_alive,
        },
        used,
    )))
}

/// Whether the comma-separated `value` lists `token` (read as bytes: a token is ASCII, and a
/// UTF-8 check per field cost more than the comparison).
fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&byte| byte == b',')
        .any(|part| part.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

impl Head {
    fn into_response(
        self,
        stream: TcpStream,
        buf: BytesMut,
        pool: Weak<Pool>,
    ) -> Response<CallBody> {
        let mut body = CallBody {
            stream: Some(stream),
            buf,
            framing: self.framing,
            keep_alive: self.keep_alive,
            pool,
        };
        if matches!(body.framing, Framing::Length(0)) {
            body.framing = Framing::Done;
            body.release();
        }
        let mut response = Response::new(body);
        *response.status_mut() = self.status;
        *response.headers_mut() = self.headers;
        response
    }
}

#[derive(Debug, Clone, Copy)]
enum Framing {
    /// This many bytes are left.
    Length(u64),
    Chunked(Chunk),
    /// Until the server closes the connection.
    UntilClose,
    /// The body ended (or failed): nothing more comes.
    Done,
}

#[derive(Debug, Clone, Copy)]
enum Chunk {
    /// Reading a chunk-size line.
    Size,
    /// This many bytes of the chunk's data are left.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// After the last chunk: trailer lines until an empty one.
    Trailers,
}

/// A response body read from its connection; it hands the connection back for reuse once read
/// to the end, and closes it when dropped before.
pub(crate) struct CallBody {
    /// `None` once released or failed.
    stream: Option<TcpStream>,
    /// Received bytes not decoded yet. Released whenever empty while the body waits.
    buf: BytesMut,
    framing: Framing,
    keep_alive: bool,
    pool: Weak<Pool>,
}

impl std::fmt::Debug for CallBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallBody")
            .field("framing", &self.framing)
            .field("buffered", &self.buf.len())
            .field("open", &self.stream.is_some())
            .finish()
    }
}

impl CallBody {
    /// The next data of the body from what `buf` holds, moving through the framing; `None` when
    /// more bytes are needed or the body ended.
    fn decode(&mut self) -> io::Result<Option<Bytes>> {
        loop {
            let buf = &mut self.buf;
            let (next, data) = match self.framing {
                Framing::Done => return Ok(None),
                Framing::Length(0) => (Framing::Done, None),
                Framing::Length(left) => {
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    let take = left.min(buf.len() as u64);
                    (
                        Framing::Length(left - take),
                        Some(buf.split_to(take as usize).freeze()),
                    )
                }
                Framing::UntilClose => {
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    (Framing::UntilClose, Some(buf.split().freeze()))
                }
                Framing::Chunked(Chunk::Size) => {
                    if buf.first().is_some_and(|first| !first.is_ascii_hexdigit()) {
                        return Err(invalid("bad chunk size"));
                    }
                    match httparse::parse_chunk_size(buf) {
                        Ok(httparse::Status::Complete((used, size))) => {
                            buf.advance(used);
                            let next = if size == 0 {
                                Chunk::Trailers
                            } else {
                                Chunk::Data(size)
                            };
                            (Framing::Chunked(next), None)
                        }
                        Ok(httparse::Status::Partial) if buf.len() > MAX_LINE => {
                            return Err(invalid("chunk size line too long"))
                        }
                        Ok(httparse::Status::Partial) => return Ok(None),
                        Err(_) => return Err(invalid("bad chunk size")),
                    }
                }
                Framing::Chunked(Chunk::Data(left)) => {
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    let take = left.min(buf.len() as u64);
                    let next = if take == left {
                        Chunk::DataEnd
                    } else {
                        Chunk::Data(left - take)
                    };
                    (
                        Framing::Chunked(next),
                        Some(buf.split_to(take as usize).freeze()),
                    )
                }
                Framing::Chunked(Chunk::DataEnd) => {
                    if buf.starts_with(b"\r\n") {
                        buf.advance(2);
                    } else if buf.starts_with(b"\n") {
                        buf.advance(1);
                    } else if buf.is_empty() || &buf[..] == b"\r" {
                        return Ok(None);
                    } else {
                        return Err(invalid("no CRLF after chunk data"));
                    }
                    (Framing::Chunked(Chunk::Size), None)
                }
                Framing::Chunked(Chunk::Trailers) => {
                    let Some(at) = memchr::memchr(b'\n', buf) else {
                        if buf.len() > MAX_LINE {
                            return Err(invalid("trailer line too long"));
                        }
                        return Ok(None);
                    };
                    let empty = at == 0 || (at == 1 && buf[0] == b'\r');
                    buf.advance(at + 1);
                    if empty {
                        (Framing::Done, None)
                    } else {
                        (Framing::Chunked(Chunk::Trailers), None)
                    }
                }
            };
            self.framing = next;
            if let Some(data) = data {
                return Ok(Some(data));
            }
        }
    }

    /// The body ended: the connection goes back to the pool if it can carry another exchange.
    fn release(&mut self) {
        if let Some(stream) = self.stream.take() {
            if self.keep_alive && self.buf.is_empty() {
                if let Some(pool) = self.pool.upgrade() {
                    pool.keep(stream);
                }
            }
        }
        self.buf = BytesMut::new();
    }

    fn fail(&mut self, error: io::Error) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        self.framing = Framing::Done;
        self.stream = None;
        self.buf = BytesMut::new();
        Poll::Ready(Some(Err(error)))
    }

    /// Waiting for the server: keep no more memory than the undecoded bytes need.
    fn shrink(&mut self) {
        if self.buf.is_empty() {
            self.buf = BytesMut::new();
        } else if self.buf.capacity() > 2 * self.buf.len().max(512) {
            self.buf = BytesMut::from(&self.buf[..]);
        }
    }
}

impl Body for CallBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        let this = self.get_mut();
        loop {
            match this.decode() {
                Ok(Some(data)) => return Poll::Ready(Some(Ok(Frame::data(data)))),
                Ok(None) => {}
                Err(error) => return this.fail(error),
            }
            if matches!(this.framing, Framing::Done) {
                this.release();
                return Poll::Ready(None);
            }
            let Some(stream) = this.stream.as_ref() else {
                return Poll::Ready(None);
            };
            match stream.poll_read_ready(cx) {
                Poll::Pending => {
                    // The body waits for more: acknowledge what came at once.
                    quickack(stream);
                    this.shrink();
                    return Poll::Pending;
                }
                Poll::Ready(Err(error)) => return this.fail(error),
                Poll::Ready(Ok(())) => {}
            }
            room_to_read(&mut this.buf);
            match stream.try_read_buf(&mut this.buf) {
                Ok(0) => {
                    if matches!(this.framing, Framing::UntilClose) {
                        this.keep_alive = false;
                        this.framing = Framing::Done;
                        continue;
                    }
                    return this.fail(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the connection closed in the middle of the response body",
                    ));
                }
                Ok(_) => {}
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => return this.fail(error),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.framing, Framing::Done)
    }

    fn size_hint(&self) -> SizeHint {
        match self.framing {
            Framing::Length(left) => SizeHint::with_exact(left),
            Framing::Done => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests;
