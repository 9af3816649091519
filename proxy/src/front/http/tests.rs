use http::{header, HeaderMap, HeaderValue};

use super::{accepts_event_stream, origin_allowed};
use crate::credentials::Credentials;

#[test]
fn origins() {
    let allowed = vec![
        "https://app.example.com".to_owned(),
        "tools.example.org".to_owned(),
    ];
    for origin in [
        "http://localhost",
        "http://localhost:3000",
        "https://LOCALHOST:1",
        "http://127.0.0.1:8080",
        "http://[::1]:9000",
        "http://[::1]",
        "https://app.example.com",
        "HTTPS://APP.EXAMPLE.COM",
        "http://tools.example.org:81",
    ] {
        assert!(origin_allowed(origin, &allowed), "{origin}");
    }
    for origin in [
        "null",
        "",
        "http://evil.example.com",
        "http://localhost.evil.com",
        "http://127.0.0.1.evil.com",
        "http://evil.com#@localhost",
        "https://app.example.com:8443",
        "http://[::2]",
        "localhost",
        "file://",
    ] {
        assert!(!origin_allowed(origin, &allowed), "{origin}");
    }
    assert!(origin_allowed("http://anything", &["*".to_owned()]));
}

#[test]
fn accept_headers() {
    let headers = |values: &[&str]| {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(header::ACCEPT, HeaderValue::from_str(value).unwrap());
        }
        map
    };
    assert!(accepts_event_stream(&headers(&[])));
    assert!(accepts_event_stream(&headers(&[
        "application/json, text/event-stream"
    ])));
    assert!(accepts_event_stream(&headers(&[
        "application/json",
        "*/*;q=0.1"
    ])));
    assert!(accepts_event_stream(&headers(&["Text/Event-Stream; q=1"])));
    assert!(!accepts_event_stream(&headers(&["application/json"])));
}

#[test]
fn principals_follow_authorization() {
    use crate::request::Principal;
    let principal_of = |headers: &HeaderMap| Credentials::from_request(headers, &[]).1;
    let mut headers = HeaderMap::new();
    assert_eq!(principal_of(&headers), Principal::anonymous());
    headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer a"));
    assert_eq!(
        principal_of(&headers),
        Principal::from_credential(b"Bearer a")
    );
    headers.append(header::AUTHORIZATION, HeaderValue::from_static("Bearer b"));
    assert_ne!(
        principal_of(&headers),
        Principal::from_credential(b"Bearer a")
    );
}
