//! The lean POST client against a raw TCP server that writes scripted bytes: framing, reuse,
//! and every way a legacy server's response can be malformed or cut short.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use http::Request;
use http_body_util::BodyExt as _;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpListener;

use super::*;

#[path = "../../../tests/raw_http/mod.rs"]
mod raw_http;
use raw_http::read_request;

/// A server running `handler` on every connection it accepts; counts connections.
async fn server<F, Fut>(handler: F) -> (Uri, Arc<AtomicUsize>)
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&connections);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(handler(stream));
        }
    });
    (
        format!("http://{address}/mcp").parse().unwrap(),
        connections,
    )
}

/// A server answering every request on a connection with `response`, then closing it if
/// `close`.
async fn scripted(response: &'static [u8], close: bool) -> (Uri, Arc<AtomicUsize>) {
    server(move |mut stream| async move {
        while read_request(&mut stream).await.is_some() {
            if stream.write_all(response).await.is_err() || close {
                return;
            }
        }
    })
    .await
}

fn client(uri: &Uri) -> CallConnections {
    CallConnections::new(uri, Duration::from_secs(2), Duration::from_secs(30))
}

fn post(uri: &Uri, body: &'static str) -> Request<Bytes> {
    Request::builder()
        .method("POST")
        .uri("/mcp")
        .header(http::header::HOST, uri.authority().unwrap().as_str())
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Bytes::from_static(body.as_bytes()))
        .unwrap()
}

/// The whole body, or the error that ended it; fails the test if it takes more than 5 s.
async fn collect(response: Response<CallBody>) -> io::Result<Bytes> {
    tokio::time::timeout(Duration::from_secs(5), response.into_body().collect())
        .await
        .expect("the body neither ended nor failed")
        .map(|body| body.to_bytes())
}

#[tokio::test]
async fn content_length_bodies_reuse_one_connection() {
    let (uri, connections) = scripted(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 7\r\n\r\n{\"a\":1}",
        false,
    )
    .await;
    let client = client(&uri);
    for _ in 0..5 {
        let response = client.request(post(&uri, "{}")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "application/json");
        assert_eq!(collect(response).await.unwrap(), "{\"a\":1}");
    }
    assert_eq!(connections.load(Ordering::SeqCst), 1);
    assert_eq!(client.idle(), 1);
}

/// A legacy server with Nagle's algorithm on (no `TCP_NODELAY`, as `axum::serve`) writing its
/// response head and body apart holds the body until the head is acknowledged; on a kept
/// connection Linux delays that ACK by 40 ms or more unless the client acknowledges at once while
/// it waits. The median of 20 exchanges stays far below that (a stall would be in every one).
#[tokio::test]
async fn a_server_holding_its_body_for_our_ack_is_not_stalled() {
    const HEAD: &[u8] =
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n";
    let (uri, _) = server(|mut stream| async move {
        assert!(
            !stream.nodelay().unwrap(),
            "the test needs Nagle's algorithm on"
        );
        while read_request(&mut stream).await.is_some() {
            if stream.write_all(HEAD).await.is_err()
                || stream.write_all(b"{\"ok\":true}").await.is_err()
            {
                return;
            }
        }
    })
    .await;
    let client = client(&uri);
    let mut took = Vec::new();
    for _ in 0..20 {
        let started = std::time::Instant::now();
        let response = client.request(post(&uri, "{}")).await.unwrap();
        assert_eq!(&collect(response).await.unwrap()[..], b"{\"ok\":true}");
        took.push(started.elapsed());
    }
    took.sort();
    assert!(
        took[10] < Duration::from_millis(20),
        "exchanges stalled on delayed ACKs: {took:?}"
    );
}

#[tokio::test]
async fn the_request_is_sent_with_its_headers_and_body() {
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let (uri, _) = server(move |mut stream| {
        let seen_tx = seen_tx.clone();
        async move {
            let request = read_request(&mut stream).await.unwrap();
            let _ = seen_tx.send(request.bytes);
            let _ = stream
                .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    })
    .await;
    let body = "x".repeat(COPY_BODY_UP_TO + 10);
    let body: &'static str = Box::leak(body.into_boxed_str());
    let response = client(&uri).request(post(&uri, body)).await.unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert!(response.body().is_end_stream());
    let request = String::from_utf8(seen.recv().await.unwrap()).unwrap();
    assert!(request.starts_with("POST /mcp HTTP/1.1\r\n"), "{request}");
    assert!(request.contains("content-type: application/json\r\n"));
    assert!(request.contains(&format!("content-length: {}\r\n", body.len())));
    assert!(request.ends_with(body));
}

#[tokio::test]
async fn chunked_bodies_are_decoded_however_they_are_cut() {
    // Extensions, a trailer, informational heads first; written one byte at a time.
    const RESPONSE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\
        content-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n\
        5;name=value\r\nhello\r\nA\r\n, world!!!\r\n0\r\nx-trailer: 1\r\n\r\n";
    let (uri, connections) = server(|mut stream| async move {
        while read_request(&mut stream).await.is_some() {
            for byte in RESPONSE {
                if stream.write_all(&[*byte]).await.is_err() {
                    return;
                }
            }
        }
    })
    .await;
    let client = client(&uri);
    for _ in 0..2 {
        let response = client.request(post(&uri, "{}")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(collect(response).await.unwrap(), "hello, world!!!");
    }
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_body_until_close_ends_with_the_connection_which_is_not_reused() {
    let (uri, connections) = scripted(b"HTTP/1.1 200 OK\r\n\r\nall of it", true).await;
    let client = client(&uri);
    for _ in 0..2 {
        let response = client.request(post(&uri, "{}")).await.unwrap();
        assert_eq!(collect(response).await.unwrap(), "all of it");
    }
    assert_eq!(connections.load(Ordering::SeqCst), 2);
    assert_eq!(client.idle(), 0);
}

#[tokio::test]
async fn a_connection_the_server_closed_while_idle_is_not_reused() {
    // The server answers one request per connection, closes it, then says so.
    let (closed_tx, mut closed) = tokio::sync::mpsc::unbounded_channel();
    let (uri, connections) = server(move |mut stream| {
        let closed_tx = closed_tx.clone();
        async move {
            if read_request(&mut stream).await.is_some() {
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                    .await;
            }
            drop(stream);
            let _ = closed_tx.send(());
        }
    })
    .await;
    let client = client(&uri);
    for _ in 0..3 {
        let response = client.request(post(&uri, "{}")).await.unwrap();
        assert_eq!(collect(response).await.unwrap(), "ok");
        // The server has closed the connection (on loopback its FIN is in our socket by
        // then); one turn of the runtime lets the I/O driver see it before the next request.
        closed.recv().await.unwrap();
        tokio::task::yield_now().await;
    }
    assert_eq!(connections.load(Ordering::SeqCst), 3);
}

async fn body_error(response: &'static [u8]) -> io::Error {
    let (uri, _) = scripted(response, true).await;
    let response = client(&uri).request(post(&uri, "{}")).await.unwrap();
    collect(response).await.unwrap_err()
}

#[tokio::test]
async fn a_truncated_chunk_is_an_error() {
    let error =
        body_error(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n10\r\nonly part").await;
    assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof, "{error}");
}

#[tokio::test]
async fn a_body_shorter_than_its_content_length_is_an_error() {
    let error = body_error(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort").await;
    assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof, "{error}");
}

#[tokio::test]
async fn bad_chunk_framing_is_an_error() {
    for response in [
        &b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1ffffffffffffffff\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhiXX0\r\n\r\n",
    ] {
        let error = body_error(response).await;
        assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}");
    }
}

#[tokio::test]
async fn endless_size_and_trailer_lines_are_errors_not_memory() {
    let (uri, _) = server(|mut stream| async move {
        read_request(&mut stream).await;
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1;")
            .await;
        let filler = vec![b'x'; 1024];
        for _ in 0..64 {
            if stream.write_all(&filler).await.is_err() {
                return;
            }
        }
    })
    .await;
    let response = client(&uri).request(post(&uri, "{}")).await.unwrap();
    let error = collect(response).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}");
}

#[tokio::test]
async fn bad_response_heads_are_errors() {
    for (response, what) in [
        (&b"NOT HTTP AT ALL\r\n\r\n"[..], "bad response head"),
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nok",
            "conflicting",
        ),
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
            "Content-Length",
        ),
        (b"HTTP/1.1 200 OK\r\ncontent-le", "before the response head"),
    ] {
        let (uri, _) = scripted(response, true).await;
        let error = client(&uri).request(post(&uri, "{}")).await.unwrap_err();
        assert!(error.to_string().contains(what), "{what}: {error}");
        assert!(!error.is_connect());
    }
}

#[tokio::test]
async fn a_connection_reset_in_the_middle_of_an_event_is_an_error() {
    let (uri, _) = server(|mut stream| async move {
        read_request(&mut stream).await;
        let _ = stream
            .write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                  transfer-encoding: chunked\r\n\r\n20\r\ndata: {\"jsonrpc\":\"2.0\",\"met",
            )
            .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        // SO_LINGER 0: closing sends a reset.
        let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
        drop(stream);
    })
    .await;
    let response = client(&uri).request(post(&uri, "{}")).await.unwrap();
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert!(first.starts_with(b"data: "));
    let error = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .expect("no hang")
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            error.kind(),
            io::ErrorKind::ConnectionReset | io::ErrorKind::UnexpectedEof
        ),
        "{error}"
    );
    assert!(body.frame().await.is_none(), "nothing after the error");
}

#[tokio::test]
async fn a_waiting_body_holds_no_read_buffer() {
    let (release_tx, release) = tokio::sync::oneshot::channel::<()>();
    let release = Arc::new(Mutex::new(Some(release)));
    let (uri, _) = server(move |mut stream| {
        let release = lock(&release).take();
        async move {
            read_request(&mut stream).await;
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6\r\nfirst\n\r\n")
                .await;
            if let Some(release) = release {
                let _ = release.await;
            }
            let _ = stream.write_all(b"5\r\nlast\n\r\n0\r\n\r\n").await;
        }
    })
    .await;
    let response = client(&uri).request(post(&uri, "{}")).await.unwrap();
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(first, "first\n");
    // Waiting for the rest (as a paused call's stream does): nothing buffered, nothing held.
    let waited = tokio::time::timeout(Duration::from_millis(100), body.frame()).await;
    assert!(waited.is_err());
    assert_eq!(body.buf.capacity(), 0);
    release_tx.send(()).unwrap();
    let last = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(last, "last\n");
    assert!(body.frame().await.is_none());
}

#[tokio::test]
async fn nothing_listening_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let uri: Uri = format!("http://{}/mcp", listener.local_addr().unwrap())
        .parse()
        .unwrap();
    drop(listener);
    let error = client(&uri).request(post(&uri, "{}")).await.unwrap_err();
    assert!(error.is_connect(), "{error:?}");
}

proptest::proptest! {
    /// The chunked decoder itself, fed the body cut at any points (a socket may deliver any
    /// split; the test over loopback above cannot be sure to reach each one): the same data,
    /// and the body ends exactly after the trailers.
    #[test]
    fn chunked_decoding_does_not_depend_on_the_cuts(
        cuts in proptest::collection::vec(0..CHUNKED_BODY.len(), 0..8),
    ) {
        let mut cuts = cuts;
        cuts.push(CHUNKED_BODY.len());
        cuts.sort_unstable();
        let mut body = CallBody {
            stream: None,
            buf: BytesMut::new(),
            framing: Framing::Chunked(Chunk::Size),
            keep_alive: false,
            pool: Weak::new(),
        };
        let mut data = Vec::new();
        let mut from = 0;
        for cut in cuts {
            body.buf.extend_from_slice(&CHUNKED_BODY[from..cut]);
            from = cut;
            while let Some(piece) = body.decode().unwrap() {
                data.extend_from_slice(&piece);
            }
        }
        proptest::prop_assert_eq!(&data[..], b"hello, world!!!");
        proptest::prop_assert!(matches!(body.framing, Framing::Done), "{:?}", body.framing);
        proptest::prop_assert!(body.buf.is_empty());
    }
}

/// The body of `chunked_bodies_are_decoded_however_they_are_cut`'s response: an extension, two
/// chunks, the last chunk, a trailer.
const CHUNKED_BODY: &[u8] =
    b"5;name=value\r\nhello\r\nA\r\n, world!!!\r\n0\r\nx-trailer: 1\r\n\r\n";

/// A head written field by field: the request line and fields as given, the body's length, and
/// the body next to the head when small, after it when large.
#[test]
fn request_head_writes_fields_length_and_body() {
    let start = RequestHead::request_line("POST", "/mcp?x=1");
    let mut head = RequestHead::new(&start, 0);
    head.field(
        &HeaderName::from_static("mcp-session-id"),
        &HeaderValue::from_static("abc"),
    );
    let small = head.finish(Bytes::from_static(b"{}"));
    assert_eq!(
        small.head,
        b"POST /mcp?x=1 HTTP/1.1\r\nmcp-session-id: abc\r\ncontent-length: 2\r\n\r\n{}"
    );
    assert!(small.body.is_none());

    let large = Bytes::from(vec![b'x'; COPY_BODY_UP_TO + 1]);
    let written = RequestHead::new(&start, 0).finish(large.clone());
    assert_eq!(
        written.head,
        format!(
            "POST /mcp?x=1 HTTP/1.1\r\ncontent-length: {}\r\n\r\n",
            COPY_BODY_UP_TO + 1
        )
        .as_bytes()
    );
    assert_eq!(written.body, Some(large));
}

/// Of the fields the lane reads, `Mcp-Session-Id` is kept only when asked for (an
/// `initialize`); the body's type and a refusal's challenge always.
#[tokio::test]
async fn the_session_id_is_read_only_when_asked_for() {
    let (uri, _) = scripted(
        b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\nmcp-session-id: s-1\r\nwww-authenticate: Bearer realm=\"x\"\r\nx-other: 1\r\ncontent-length: 2\r\n\r\n{}",
        false,
    )
    .await;
    let client = client(&uri);
    let plain = client.request(post(&uri, "{}")).await.unwrap();
    assert_eq!(plain.headers()["content-type"], "application/json");
    assert_eq!(plain.headers()["www-authenticate"], "Bearer realm=\"x\"");
    assert!(plain.headers().get("mcp-session-id").is_none());
    assert!(plain.headers().get("x-other").is_none());
    collect(plain).await.unwrap();
    let asked = client
        .send(encode(&post(&uri, "{}")).reading_session_id())
        .await
        .unwrap();
    assert_eq!(asked.headers()["mcp-session-id"], "s-1");
    assert_eq!(asked.headers()["content-type"], "application/json");
}

#[test]
fn tokens_are_found_in_lists_whatever_their_case_and_spacing() {
    assert!(has_token(b"keep-alive, Close", "close"));
    assert!(has_token(b" CLOSE ", "close"));
    assert!(!has_token(b"keep-alive", "close"));
    assert!(!has_token(b"closed, x-close", "close"));
    assert!(has_token(b"\xff, close", "close"));
}
