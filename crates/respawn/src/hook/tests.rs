//! Hook messages: event names, notification payloads, and a round trip over a socket.

use hyoka_idle_detect::HookEvent;
use serde_json::json;

use super::{HookListener, HookMessage, send_hook};

#[track_caller]
fn check(event: &str, payload: serde_json::Value, expected: Option<HookEvent>) {
    let message = HookMessage {
        event: event.to_owned(),
        payload,
    };
    assert_eq!(message.hook_event(), expected, "{event}");
}

#[test]
fn event_names_and_notifications() {
    check("stop", json!(null), Some(HookEvent::Stop));
    check("Stop", json!({}), Some(HookEvent::Stop));
    check("idle-prompt", json!(null), Some(HookEvent::IdlePrompt));
    check(
        "elicitation_dialog",
        json!(null),
        Some(HookEvent::ElicitationDialog),
    );
    check(
        "notification",
        json!({"notification_type": "permission_prompt"}),
        Some(HookEvent::PermissionPrompt),
    );
    check(
        "notification",
        json!({"message": "Claude is waiting for your input"}),
        Some(HookEvent::IdlePrompt),
    );
    check("notification", json!({"message": "hello"}), None);
    check("teammate_idle", json!(null), None);
}

#[tokio::test]
async fn a_message_goes_through_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hook.sock");
    let listener = HookListener::bind(&path).await.unwrap();
    let message = HookMessage {
        event: "stop".to_owned(),
        payload: json!({"session_id": "x", "hook_event_name": "Stop"}),
    };
    let (sent, received) = tokio::join!(send_hook(&path, &message), listener.next());
    sent.unwrap();
    assert_eq!(received.unwrap(), message);
    // A second listener on a live socket is refused; the socket goes with the listener.
    assert!(HookListener::bind(&path).await.is_err());
    drop(listener);
    assert!(!path.exists());
}

#[tokio::test]
async fn garbage_is_an_error_not_a_panic() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hook.sock");
    let listener = HookListener::bind(&path).await.unwrap();
    let send = async {
        let mut stream = tokio::net::UnixStream::connect(&path).await.unwrap();
        stream.write_all(b"not json\n").await.unwrap();
    };
    let ((), received) = tokio::join!(send, listener.next());
    assert!(received.is_err());
}
