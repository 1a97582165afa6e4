//! A running stub and a one-request-per-connection HTTP/1.1 client.

use std::net::SocketAddr;
use std::time::Duration;

use hyoka_model_stub::{Script, Stub};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A stub serving on an ephemeral loopback port, stopped on drop.
pub(crate) struct Running {
    pub(crate) addr: SocketAddr,
    pub(crate) stub: Stub,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub(crate) async fn start(yaml: &str) -> Running {
    let script = Script::from_yaml(yaml).expect("a valid script");
    let stub = Stub::new(script);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("an address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(stub.clone().serve(listener, async move {
        let _ = stopped.await;
    }));
    Running {
        addr,
        stub,
        stop: Some(stop),
    }
}

/// A response being read: its status, and the body as it arrives.
pub(crate) struct Response {
    pub(crate) status: u16,
    reader: BufReader<TcpStream>,
}

const LIMIT: Duration = Duration::from_secs(30);

pub(crate) async fn send(addr: SocketAddr, method: &str, path: &str, body: &str) -> Response {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: stub\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    tokio::time::timeout(LIMIT, reader.read_line(&mut status_line))
        .await
        .expect("a status line in time")
        .expect("read");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.expect("a header");
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    Response { status, reader }
}

impl Response {
    /// Reads until `needle` has arrived (chunked framing included), returning what came.
    pub(crate) async fn until(&mut self, needle: &str) -> String {
        let mut seen = String::new();
        tokio::time::timeout(LIMIT, async {
            while !seen.contains(needle) {
                let mut buf = [0u8; 4096];
                let n = self.reader.read(&mut buf).await.expect("read");
                assert!(n > 0, "the body ended before {needle:?}: {seen}");
                seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
        .await
        .expect("the body in time");
        seen
    }

    /// The rest of the body.
    pub(crate) async fn rest(mut self) -> String {
        let mut body = Vec::new();
        tokio::time::timeout(LIMIT, self.reader.read_to_end(&mut body))
            .await
            .expect("the body in time")
            .expect("read");
        String::from_utf8_lossy(&body).into_owned()
    }
}

pub(crate) async fn get_json(addr: SocketAddr, path: &str) -> Value {
    let body = send(addr, "GET", path, "").await.rest().await;
    // The body may be chunked: the JSON is the part between the first `{`/`[` and the end.
    let start = body.find(['{', '[']).expect("JSON");
    let end = body.rfind(['}', ']']).expect("JSON");
    serde_json::from_str(&body[start..=end]).expect("JSON state")
}
