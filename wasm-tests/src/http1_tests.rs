#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use super::*;
use std::net::TcpListener;

/// A server on a thread: for each connection accepted, reads one request head and writes the
/// next of `answers` (whole), then closes if `close_after` says so.
fn serve(answers: Vec<Vec<u8>>, close_after: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut answers = answers.into_iter();
        'conns: for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut buf = Vec::new();
            loop {
                let mut chunk = [0u8; 4096];
                while find(&buf, b"\r\n\r\n").is_none() {
                    match conn.read(&mut chunk) {
                        Ok(0) | Err(_) => continue 'conns,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let end = find(&buf, b"\r\n\r\n").unwrap();
                buf.drain(..end + 4);
                let Some(answer) = answers.next() else { return };
                conn.write_all(&answer).unwrap();
                if close_after {
                    continue 'conns;
                }
            }
        }
    });
    addr
}

#[test]
fn builds_requests_byte_for_byte() {
    let r = Request::post_json("h:1", "/mcp", "{}");
    assert_eq!(
        String::from_utf8(r.bytes).unwrap(),
        "POST /mcp HTTP/1.1\r\nhost: h:1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n\
         content-length: 2\r\n\r\n{}"
    );
    let r = Request::mcp_post("soak", "/a", &[("mcp-session-id", "s1")], "x");
    assert!(String::from_utf8(r.bytes)
        .unwrap()
        .ends_with("mcp-session-id: s1\r\ncontent-length: 1\r\n\r\nx"));
    let r = Request::builder("GET", "/x").header("a", "b").finish();
    assert_eq!(r.bytes, b"GET /x HTTP/1.1\r\na: b\r\n\r\n");
}

#[test]
fn reads_length_chunked_and_close_framed_bodies_on_one_connection() {
    let addr = serve(
        vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: 1\r\nx-a: 2\r\n\r\nabc".to_vec(),
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nt: 1\r\n\r\n"
                .to_vec(),
            b"HTTP/1.1 204 No Content\r\ncontent-length: 9\r\n\r\n".to_vec(),
            b"HTTP/1.1 200 OK\r\n\r\nuntil the close".to_vec(),
        ],
        false,
    );
    let mut conn = Conn::open(addr).unwrap();
    let get = Request::get("h", "/");
    let r = conn.round_trip(&get).unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"abc"[..]));
    assert_eq!(r.header("x-a"), Some("1"));
    assert_eq!(r.header_values("X-A"), ["1", "2"]);
    assert_eq!(conn.round_trip(&get).unwrap().body, b"abcde");
    let r = conn.round_trip(&get).unwrap();
    assert_eq!((r.status, r.body.len()), (204, 0));
    assert_eq!(conn.reconnects(), 0);
    // The server writes the last body and keeps the connection open: it never ends.
    let mut conn = conn.with_read_timeout(Duration::from_millis(200));
    assert_eq!(
        conn.exchange(get.as_bytes()),
        Err(Failure::Timeout(Duration::from_millis(200)))
    );
}

#[test]
fn round_trip_reopens_a_connection_the_server_closed() {
    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_vec();
    let addr = serve(vec![answer.clone(), answer.clone(), answer], true);
    let mut conn = Conn::open(addr).unwrap();
    let get = Request::get("h", "/");
    assert_eq!(conn.round_trip(&get).unwrap().body, b"ok");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(conn.round_trip(&get).unwrap().body, b"ok");
    assert_eq!(conn.reconnects(), 1);
    // exchange does not retry: the closed connection is a failure.
    std::thread::sleep(Duration::from_millis(50));
    let e = conn.exchange(get.as_bytes()).unwrap_err();
    assert_eq!(e.kind(), "reset", "{e}");
}

#[test]
fn streams_until_enough_and_keeps_every_byte() {
    let answer =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n\
               f\r\ndata: {\"a\":1}\n\n\r\n20\r\nid: 7\n"
            .to_vec();
    let addr = serve(vec![answer.clone(), answer], false);
    let mut conn = Conn::new(addr);
    conn.send(Request::get("h", "/").as_bytes()).unwrap();
    let s = conn.read_streaming(Duration::from_secs(5), |s| sse_events(&s.body).len() == 1);
    assert_eq!(s.status, 200);
    assert!(!s.complete);
    assert_eq!(s.error, None);
    assert_eq!(s.framing, Some(Framing::Chunked));
    assert_eq!(
        sse_events(&s.body),
        [SseEvent {
            data: Some("{\"a\":1}".to_owned()),
            ..SseEvent::default()
        }]
    );
    assert!(find(&s.raw, b"transfer-encoding").is_some());
    // Nothing more comes: the deadline ends it.
    let mut conn = Conn::new(addr);
    conn.send(Request::get("h", "/").as_bytes()).unwrap();
    let s = conn.read_streaming(Duration::from_millis(300), |_| false);
    assert!(s.error.is_some() && !s.complete);
}

#[test]
fn exchange_closing_reads_to_the_end() {
    let addr = serve(
        vec![b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n".to_vec()],
        true,
    );
    let r = exchange_closing(
        addr,
        b"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "hi"));
}

#[test]
fn dechunks_partial_bodies_and_parses_sse() {
    assert_eq!(
        dechunk(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"),
        (b"abcde".to_vec(), true)
    );
    assert_eq!(dechunk(b"3\r\nabc\r\n5\r\nde"), (b"abcde".to_vec(), false));
    let events =
        sse_events(b"id: 1\r\nevent: message\r\ndata: a\r\ndata:b\r\n\r\n: ping\n\ndata: c\n");
    assert_eq!(
        events,
        [SseEvent {
            id: Some("1".to_owned()),
            event: Some("message".to_owned()),
            data: Some("a\nb".to_owned()),
        }]
    );
}
