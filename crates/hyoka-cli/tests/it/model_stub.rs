//! `hyoka model-stub serve`: the base URL on stdout, a scripted reply over HTTP, the state
//! endpoint, a clean stop on SIGTERM, and bad input refused with exit 2.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use crate::support::hyoka;

/// A running `hyoka model-stub serve`, killed on drop if a test fails first.
pub(crate) struct Served {
    child: Child,
    pub(crate) url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the stub on `script` and reads its base URL from the first line on stdout.
pub(crate) fn serve(script: &std::path::Path) -> Served {
    let mut child = hyoka()
        .args(["model-stub", "serve", "--script"])
        .arg(script)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the stub");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the base URL");
    Served {
        child,
        url: line.trim().to_owned(),
    }
}

/// One HTTP/1.1 request; the whole response as text.
pub(crate) fn http(url: &str, method: &str, path: &str, body: &str) -> String {
    let addr = url.strip_prefix("http://").expect("an http URL");
    let mut stream = TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nhost: stub\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

#[test]
fn serve_prints_its_url_answers_from_the_script_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.yaml");
    std::fs::write(&script, "turns:\n  - text: scripted hello\n").unwrap();
    let mut served = serve(&script);
    assert!(
        served.url.starts_with("http://127.0.0.1:"),
        "{}",
        served.url
    );
    let body = r#"{"model":"m","stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"hi"}]}"#;
    let response = http(&served.url, "POST", "/v1/messages", body);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("text/event-stream"), "{response}");
    assert!(response.contains("scripted hello"), "{response}");
    let state = http(&served.url, "GET", "/_stub/state", "");
    assert!(state.contains(r#""replies":1"#), "{state}");
    assert!(state.contains(r#""state":"idle""#), "{state}");
    let pid = i32::try_from(served.child.id()).unwrap();
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let status = served.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_bad_script_or_address_is_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "turns:\n  - { txt: hi }\n").unwrap();
    let missing = dir.path().join("missing.yaml");
    for args in [
        vec!["--script".into(), bad.display().to_string()],
        vec!["--script".into(), missing.display().to_string()],
        vec![
            "--script".into(),
            bad.display().to_string(),
            "--listen".into(),
            "nowhere".into(),
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_hyoka"))
            .args(["model-stub", "serve"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with("error:"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
