//! An in-memory [`Terminal`]: the test (or benchmark) plays the agent through a
//! [`FakeHandle`], and every key the driver sends is recorded.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;

use hyoka_proctrack::Signal;

use super::seam::{Exit, ReadEvent, Size, Terminal};
use crate::error::RespawnError;

/// One thing the driver sent to the fake session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// Literal text.
    Text(String),
    /// Enter.
    Enter,
    /// Raw bytes from the user.
    Raw(Vec<u8>),
    /// A resize.
    Resize(Size),
}

enum Message {
    Data(Vec<u8>),
    Resized(Size),
    Close(Exit),
}

type Responder = Box<dyn FnMut(&Written) -> Option<Vec<u8>> + Send>;

#[derive(Default)]
struct Shared {
    written: Vec<Written>,
    exit: Option<Exit>,
    stops: u32,
    responder: Option<Responder>,
}

/// The driver's side: a [`Terminal`] fed by a [`FakeHandle`].
pub struct FakeTerminal {
    rx: mpsc::UnboundedReceiver<Message>,
    tx: mpsc::UnboundedSender<Message>,
    pending: Vec<u8>,
    offset: usize,
    shared: Arc<Mutex<Shared>>,
    pid: Option<u32>,
    closed: bool,
}

/// The test's side of a [`FakeTerminal`]: plays output, closes the session, reads what was
/// typed.
#[derive(Clone)]
pub struct FakeHandle {
    tx: mpsc::UnboundedSender<Message>,
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for FakeTerminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeTerminal")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for FakeHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeHandle").finish_non_exhaustive()
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FakeTerminal {
    /// A fake session with process id `pid`, and its handle.
    pub fn new(pid: Option<u32>) -> (Self, FakeHandle) {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Mutex::new(Shared::default()));
        let handle = FakeHandle {
            tx: tx.clone(),
            shared: Arc::clone(&shared),
        };
        (
            Self {
                rx,
                tx,
                pending: Vec::new(),
                offset: 0,
                shared,
                pid,
                closed: false,
            },
            handle,
        )
    }

    fn record(&self, written: Written) {
        let mut shared = lock(&self.shared);
        let reply = shared.responder.as_mut().and_then(|r| r(&written));
        shared.written.push(written);
        drop(shared);
        if let Some(bytes) = reply {
            let _ = self.tx.send(Message::Data(bytes));
        }
    }
}

impl FakeHandle {
    /// The session prints `bytes`.
    pub fn output(&self, bytes: impl Into<Vec<u8>>) {
        let _ = self.tx.send(Message::Data(bytes.into()));
    }

    /// The terminal changes size from outside (as another tmux client of another size
    /// would make it), after the output already sent: [`Terminal::read_event`] reports it
    /// in that order.
    pub fn resized(&self, size: Size) {
        let _ = self.tx.send(Message::Resized(size));
    }

    /// The session ends with `exit` (after the output already sent).
    pub fn close(&self, exit: Exit) {
        let _ = self.tx.send(Message::Close(exit));
    }

    /// Everything typed so far.
    pub fn written(&self) -> Vec<Written> {
        lock(&self.shared).written.clone()
    }

    /// How often the session was stopped.
    pub fn stops(&self) -> u32 {
        lock(&self.shared).stops
    }

    /// Answers every write with the output `responder` returns (an agent that reacts).
    pub fn respond(&self, responder: impl FnMut(&Written) -> Option<Vec<u8>> + Send + 'static) {
        lock(&self.shared).responder = Some(Box::new(responder));
    }
}

#[async_trait]
impl Terminal for FakeTerminal {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, RespawnError> {
        loop {
            if let ReadEvent::Output(n) = self.read_event(buf).await? {
                return Ok(n);
            }
        }
    }

    async fn read_event(&mut self, buf: &mut [u8]) -> Result<ReadEvent, RespawnError> {
        loop {
            if self.offset < self.pending.len() {
                let n = buf.len().min(self.pending.len() - self.offset);
                buf[..n].copy_from_slice(&self.pending[self.offset..self.offset + n]);
                self.offset += n;
                return Ok(ReadEvent::Output(n));
            }
            if self.closed {
                return Ok(ReadEvent::Output(0));
            }
            match self.rx.recv().await {
                Some(Message::Data(bytes)) => {
                    self.pending = bytes;
                    self.offset = 0;
                }
                Some(Message::Resized(size)) => return Ok(ReadEvent::Resized(size)),
                Some(Message::Close(exit)) => {
                    lock(&self.shared).exit = Some(exit);
                    self.closed = true;
                }
                None => self.closed = true,
            }
        }
    }

    async fn send_text(&mut self, text: &str) -> Result<(), RespawnError> {
        if self.closed {
            return Err(RespawnError::Closed);
        }
        self.record(Written::Text(text.to_owned()));
        Ok(())
    }

    async fn send_enter(&mut self) -> Result<(), RespawnError> {
        if self.closed {
            return Err(RespawnError::Closed);
        }
        self.record(Written::Enter);
        Ok(())
    }

    async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), RespawnError> {
        self.record(Written::Raw(bytes.to_vec()));
        Ok(())
    }

    async fn resize(&mut self, size: Size) -> Result<(), RespawnError> {
        self.record(Written::Resize(size));
        Ok(())
    }

    fn child_pid(&self) -> Option<u32> {
        self.pid
    }

    fn exit(&mut self) -> Option<Exit> {
        lock(&self.shared).exit
    }

    async fn stop_with_signal(
        &mut self,
        _signal: Signal,
        _grace: Duration,
    ) -> Result<Exit, RespawnError> {
        let mut shared = lock(&self.shared);
        shared.stops += 1;
        let exit = *shared.exit.get_or_insert(Exit {
            code: None,
            signal: Some(15),
        });
        self.closed = true;
        Ok(exit)
    }
}
