//! The HTTP server: one axum fallback handler that routes by path ([`route`]), reads the
//! request ([`crate::protocol::read`]), asks the shared state what to send and streams it
//! at the script's pace.

use std::convert::Infallible;
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::net::TcpListener;

use crate::error::StubError;
use crate::protocol::{self, Exchange, Ids, Protocol, Rendered, Route, SESSION_HEADERS, route};
use crate::script::Script;
use crate::state::{LogEntry, Plan, Shared, StateSnapshot};

/// The largest request body read (agents send their whole history each time).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A scripted model server. Cloning shares the state: serve one clone, read the state from
/// another.
#[derive(Clone)]
pub struct Stub {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Stub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stub").finish_non_exhaustive()
    }
}

impl Stub {
    /// A stub that answers with `script`.
    pub fn new(script: Script) -> Self {
        Self {
            shared: Arc::new(Shared::new(script, None)),
        }
    }

    /// A stub that also writes every request's log entry to `log`, one JSON line each.
    pub fn with_log(script: Script, log: Box<dyn Write + Send>) -> Self {
        Self {
            shared: Arc::new(Shared::new(script, Some(log))),
        }
    }

    /// The state now: what each conversation is doing and its turn.
    pub fn state(&self) -> StateSnapshot {
        self.shared.snapshot()
    }

    /// The requests logged so far (the last 2,000).
    pub fn requests(&self) -> Vec<LogEntry> {
        self.shared.requests()
    }

    /// Serves on `listener` until `shutdown` completes.
    ///
    /// # Errors
    ///
    /// [`StubError::Serve`] when the listener fails.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), StubError> {
        let addr = listener
            .local_addr()
            .map_or_else(|_| "?".to_owned(), |a: SocketAddr| a.to_string());
        let app = axum::Router::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(self.shared);
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|source| StubError::Serve { addr, source })
    }
}

fn json(status: u16, value: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        value.to_string(),
    )
        .into_response()
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), ToString::to_string);
    let method = method.as_str().to_owned();
    let model = shared
        .script
        .model
        .clone()
        .unwrap_or_else(|| "stub".to_owned());
    match route(&method, uri.path()) {
        Route::State => json(
            200,
            &serde_json::to_value(shared.snapshot()).unwrap_or_default(),
        ),
        Route::Requests => json(
            200,
            &serde_json::to_value(shared.requests()).unwrap_or_default(),
        ),
        Route::Health => json(200, &serde_json::json!({"ok": true})),
        Route::Models(p) => {
            shared.log(&method, &path, None, Some(p), 200, "models".to_owned());
            json(200, &protocol::models(p, &model))
        }
        Route::CountTokens(p) => {
            shared.log(
                &method,
                &path,
                None,
                Some(p),
                200,
                "count_tokens".to_owned(),
            );
            json(200, &protocol::count_tokens(p, &body))
        }
        Route::Unknown => {
            shared.unknown();
            let guess = if path.contains("/v1beta/") {
                Some(Protocol::Gemini)
            } else {
                None
            };
            let message = format!("the model stub does not serve {method} {}", uri.path());
            shared.log(&method, &path, None, guess, 404, "unknown path".to_owned());
            json(404, &protocol::bad_request(guess, 404, &message))
        }
        Route::Generate {
            protocol: p,
            stream_path,
            model: path_model,
        } => {
            let session = SESSION_HEADERS
                .iter()
                .find_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()));
            match protocol::read(p, stream_path, path_model.as_deref(), session, &body) {
                Ok(exchange) => generate(shared, &method, &path, exchange).await,
                Err(message) => {
                    shared.unknown();
                    shared.log(
                        &method,
                        &path,
                        None,
                        Some(p),
                        400,
                        format!("bad request: {message}"),
                    );
                    json(400, &protocol::bad_request(Some(p), 400, &message))
                }
            }
        }
    }
}

async fn generate(shared: Arc<Shared>, method: &str, path: &str, exchange: Exchange) -> Response {
    let plan = shared.begin(&exchange);
    let model = shared
        .script
        .model
        .clone()
        .unwrap_or_else(|| exchange.model.clone());
    if !plan.turn.delay.is_zero() {
        tokio::time::sleep(plan.turn.delay).await;
    }
    if let Some(kind) = plan.error {
        let (status, body) = protocol::error(exchange.protocol, kind);
        let seq = shared.log(
            method,
            path,
            Some(&exchange),
            None,
            status,
            format!("error {status}"),
        );
        shared.finish(&exchange, &plan, false);
        shared.ended(seq);
        let mut response = json(status, &body);
        // Ask for a quick retry: a scripted error tests the agent's handling, not its
        // patience.
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("0"));
        return response;
    }
    let ids = Ids::new(plan.number, exchange.turn, plan.attempt);
    let outcome = if exchange.side { "side" } else { "reply" };
    match protocol::render(&exchange, &model, &plan.turn, &ids) {
        Rendered::Whole(body) => {
            let seq = shared.log(method, path, Some(&exchange), None, 200, outcome.to_owned());
            shared.finish(&exchange, &plan, true);
            shared.ended(seq);
            json(200, &body)
        }
        Rendered::Stream(frames) => {
            let seq = shared.log(method, path, Some(&exchange), None, 200, outcome.to_owned());
            let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
            tokio::spawn(pump(shared, exchange, plan, seq, frames, tx));
            let stream = futures_util::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
            });
            (
                StatusCode::OK,
                [
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("text/event-stream"),
                    ),
                    (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
                ],
                Body::from_stream(stream),
            )
                .into_response()
        }
    }
}

/// Sends `frames` at the script's pace, then marks the reply finished.
async fn pump(
    shared: Arc<Shared>,
    exchange: Exchange,
    plan: Plan,
    seq: u64,
    frames: Vec<String>,
    tx: tokio::sync::mpsc::Sender<Bytes>,
) {
    let gaps = u32::try_from(frames.len().saturating_sub(1).max(1)).unwrap_or(u32::MAX);
    let gap: Duration = plan.turn.pace / gaps;
    let mut completed = true;
    for (i, frame) in frames.into_iter().enumerate() {
        if i > 0 && !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
        if let Some(stall) = plan.turn.stall
            && i == stall.after
        {
            tokio::time::sleep(stall.duration).await;
        }
        if tx.send(Bytes::from(frame)).await.is_err() {
            completed = false;
            break;
        }
    }
    // Finished before the body ends, so a client that saw the end reads the new state.
    shared.finish(&exchange, &plan, completed);
    shared.ended(seq);
    drop(tx);
}
