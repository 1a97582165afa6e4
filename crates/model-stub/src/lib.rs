//! A scripted model server: it speaks the wire protocols coding agents use to reach their
//! models, and answers from a script instead of a model, so a real agent runs offline,
//! deterministically and for free.
//!
//! # Overview
//!
//! - [`Script`] is the YAML script: each reply's text, thinking, tool calls, usage, pace,
//!   stalls and API errors ([`Turn`], [`ToolCall`], [`Usage`], [`ScriptedError`]).
//! - [`Stub`] serves it over HTTP/1.1 on a [`tokio::net::TcpListener`]: Anthropic Messages
//!   (Claude Code), OpenAI Responses (Codex) and Chat Completions, and Gemini
//!   `generateContent`/`streamGenerateContent` (Gemini CLI), each streamed as the agent's own
//!   client reads it ([`Protocol`]).
//! - [`StateSnapshot`] is what `GET /_stub/state` answers: per conversation its turn and
//!   [`Phase`] (idle, streaming, waiting for a tool result); `GET /_stub/requests` lists the
//!   [`LogEntry`] of every request.
//!
//! # Theory of operation
//!
//! Agents send their whole conversation with every request, so the stub needs no session to
//! know where a conversation stands: a request whose history holds `N` model replies gets
//! the script's reply `N` (a run of consecutive model items, such as a message and its tool
//! calls, is one reply). Several agents can share one stub: each conversation is told apart
//! by the agent's session header or by its first user message, and has its own state. A
//! request that offers no tools is a *side request* (a title, a classification) and gets
//! the script's `side` reply without becoming a turn. A scripted error answers the first
//! `times` attempts of its reply and then the reply is served, so an agent's retries are
//! tested too. Paths and bodies the stub does not know are answered with an error in the
//! protocol's shape and logged.
//!
//! # Example
//!
//! ```no_run
//! use hyoka_model_stub::{Script, Stub};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let script = Script::from_yaml(
//!     "turns:\n  - tools: [{ name: Write, input: { file_path: a.txt, content: hi } }]\n  - text: Done.\n",
//! )?;
//! let stub = Stub::new(script);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! println!("ANTHROPIC_BASE_URL=http://{}", listener.local_addr()?);
//! let watcher = stub.clone();
//! tokio::spawn(stub.serve(listener, std::future::pending()));
//! println!("{:?}", watcher.state().state);
//! # Ok(())
//! # }
//! ```

mod error;
mod protocol;
mod script;
mod server;
mod state;

pub use crate::error::StubError;
pub use crate::protocol::{
    Exchange, Ids, Protocol, Rendered, Route, SESSION_HEADERS, bad_request, count_tokens, error,
    models, read, render, route, schema_instance,
};
pub use crate::script::{
    DEFAULT_CHUNK, ErrorKind, MAX_TURNS, Script, ScriptedError, Stall, ToolCall, ToolInput, Turn,
    Usage,
};
pub use crate::server::Stub;
pub use crate::state::{ConversationSnapshot, LogEntry, Phase, StateSnapshot};
