//! Output feeding: what a phase process prints is copied into its capped log, and the
//! agent's is also read line by line by its events reader (stdout, or the `$HYOKA_EVENTS`
//! file it appends to), each event sent to the eval's loop.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::mpsc::UnboundedSender;

use crate::capped_log::{CappedLog, OUTPUT_CAP};
use crate::host::{Pipe, Process};
use hyoka_events::{AgentEvent, LineCounts, LineReader, LineSplitter};

/// Copies a pipe into the log; with `events`, also reads it with that reader and sends the
/// events it finds. Returns what the reader made of the lines.
pub(super) async fn pump_events(
    mut pipe: Pipe,
    log: &CappedLog,
    mut events: Option<(Box<dyn LineReader>, UnboundedSender<AgentEvent>)>,
) -> std::io::Result<LineCounts> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = Lines::default();
    loop {
        let n = pipe.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        log.write(&buf[..n]).await?;
        if let Some((reader, tx)) = &mut events {
            lines.feed(&buf[..n], reader.as_mut(), tx);
        }
    }
    Ok(events.map_or_else(LineCounts::default, |(mut reader, tx)| {
        lines.finish(reader.as_mut(), &tx);
        reader.counts()
    }))
}

/// A reader's line splitting and event buffer.
#[derive(Default)]
struct Lines {
    splitter: LineSplitter,
    parsed: Vec<AgentEvent>,
}

impl Lines {
    /// Reads the complete lines of `chunk` and sends their events.
    fn feed(
        &mut self,
        chunk: &[u8],
        reader: &mut dyn LineReader,
        tx: &UnboundedSender<AgentEvent>,
    ) {
        let parsed = &mut self.parsed;
        self.splitter.feed(chunk, |line, oversized| {
            read(reader, line, oversized, parsed);
        });
        for event in self.parsed.drain(..) {
            let _ = tx.send(event);
        }
    }

    /// Reads a last line without a newline and sends its events.
    fn finish(&mut self, reader: &mut dyn LineReader, tx: &UnboundedSender<AgentEvent>) {
        let parsed = &mut self.parsed;
        self.splitter
            .finish(|line, oversized| read(reader, line, oversized, parsed));
        for event in self.parsed.drain(..) {
            let _ = tx.send(event);
        }
    }
}

fn read(reader: &mut dyn LineReader, line: &[u8], oversized: bool, out: &mut Vec<AgentEvent>) {
    if oversized {
        reader.oversized();
    } else {
        reader.read_line(line, out);
    }
}

/// The most of `$HYOKA_EVENTS` read and kept, like `output.log`'s cap: past it the file is
/// no longer read, and is cut back to it.
pub(crate) const EVENTS_CAP: u64 = OUTPUT_CAP;

/// Follows `$HYOKA_EVENTS` through `file` (a descriptor of the file hyoka created, so a
/// path the agent replaced is never followed) until `done`, then reads what is left; at most
/// `cap` bytes, after which `capped` is set and reading stops. Returns what the reader made
/// of the lines.
pub(super) async fn tail_jsonl(
    file: std::fs::File,
    (cap, capped): (u64, Arc<AtomicBool>),
    mut reader: Box<dyn LineReader>,
    tx: UnboundedSender<AgentEvent>,
    mut done: tokio::sync::watch::Receiver<bool>,
) -> LineCounts {
    let mut file = tokio::fs::File::from_std(file);
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = Lines::default();
    let mut read_so_far = 0u64;
    loop {
        let finished = *done.borrow();
        match file.read(&mut buf).await {
            Ok(0) | Err(_) if finished => break,
            Ok(0) | Err(_) => {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(50)) => {}
                    _ = done.changed() => {}
                }
            }
            Ok(n) => {
                let room = usize::try_from(cap.saturating_sub(read_so_far)).unwrap_or(usize::MAX);
                let kept = n.min(room);
                lines.feed(&buf[..kept], reader.as_mut(), &tx);
                read_so_far += kept as u64;
                if kept < n {
                    capped.store(true, Ordering::Relaxed);
                    break;
                }
            }
        }
    }
    lines.finish(reader.as_mut(), &tx);
    reader.counts()
}

/// What a phase printed on stdout, for reading it afterwards (a review's verdict): its first
/// `limit` bytes and its last `limit` bytes (where a verdict line is), never more, however
/// much it prints.
#[derive(Clone)]
pub(super) struct Capture {
    limit: usize,
    kept: Arc<Mutex<Kept>>,
}

/// The head, the tail, and whether anything between them was dropped.
#[derive(Default)]
struct Kept {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    cut: bool,
}

impl Capture {
    /// A capture keeping at most `limit` bytes of head and `limit` of tail.
    pub(super) fn new(limit: usize) -> Self {
        Self {
            limit,
            kept: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds what the phase printed next.
    pub(super) fn push(&self, bytes: &[u8]) {
        let limit = self.limit;
        let mut kept = self.lock();
        let room = limit.saturating_sub(kept.head.len());
        let (first, rest) = bytes.split_at(bytes.len().min(room));
        kept.head.extend_from_slice(first);
        kept.tail.extend(rest);
        if kept.tail.len() > limit {
            let excess = kept.tail.len() - limit;
            kept.tail.drain(..excess);
            kept.cut = true;
        }
    }

    /// The output as kept: whole when it fit, else its tail only (the head is logs).
    pub(super) fn take(&self) -> Vec<u8> {
        let mut kept = self.lock();
        if kept.cut {
            kept.tail.drain(..).collect()
        } else {
            let mut all = std::mem::take(&mut kept.head);
            all.extend(kept.tail.drain(..));
            all
        }
    }
}

/// Pumps a phase process's stdout and stderr into `log`; stdout also into `capture`.
pub(super) fn pump_both(
    agent: &mut dyn Process,
    log: &CappedLog,
    capture: Option<Capture>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut pumps = Vec::new();
    if let Some(out) = agent.take_stdout() {
        let log = log.clone();
        pumps.push(tokio::spawn(async move { pump(out, &log, capture).await }));
    }
    if let Some(err) = agent.take_stderr() {
        let log = log.clone();
        pumps.push(tokio::spawn(async move { pump(err, &log, None).await }));
    }
    pumps
}

async fn pump(mut reader: Pipe, log: &CappedLog, capture: Option<Capture>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let _ = log.write(&buf[..n]).await;
                if let Some(capture) = &capture {
                    capture.push(&buf[..n]);
                }
            }
        }
    }
}
