//! `output.log`: the agent's stdout and stderr, interleaved as they arrive, capped; and the
//! bounded wait for the pumps that fill it.

use std::path::Path;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

/// The most `output.log` holds before it is cut with a marker.
pub(crate) const OUTPUT_CAP: u64 = 16 * 1024 * 1024;

/// How long output may still drain once the tree that wrote it is stopped. Every writer
/// hyoka tracks is gone by then, so what is left is read at once; a writer outside the
/// tree that holds the pipe (a daemon that inherited it, a process that opened it through
/// `/proc`) must not hold the run, its timeout or its signals.
pub(crate) const DRAIN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// Waits for output pumps until [`DRAIN_DEADLINE`], then stops the ones still reading.
/// Returns what each finished one returned (in order), and whether any had to be stopped
/// (the pipe was still held open).
pub(crate) async fn drain<T: Send + 'static>(
    pumps: impl IntoIterator<Item = tokio::task::JoinHandle<T>>,
) -> (Vec<T>, bool) {
    let mut pumps: Vec<_> = pumps.into_iter().collect();
    let mut done = Vec::new();
    let all = tokio::time::timeout(DRAIN_DEADLINE, async {
        for pump in &mut pumps {
            match pump.await {
                Ok(value) => done.push(value),
                Err(err) => tracing::warn!(error = %err, "an output pump failed"),
            }
        }
    })
    .await
    .is_ok();
    // Stops those still reading; a finished task is not affected.
    for pump in &pumps {
        pump.abort();
    }
    (done, !all)
}

/// A shared, capped log file that several pipes write into.
#[derive(Clone)]
pub(crate) struct CappedLog {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    file: tokio::fs::File,
    written: u64,
    discarded: u64,
    cap: u64,
}

impl CappedLog {
    /// Creates (truncates) the log at `path`.
    pub(crate) async fn create(path: &Path, cap: u64) -> std::io::Result<Self> {
        let file = tokio::fs::File::create(path).await?;
        Ok(Self {
            inner: Arc::new(Mutex::new(Inner {
                file,
                written: 0,
                discarded: 0,
                cap,
            })),
        })
    }

    /// Appends `bytes`, dropping whatever exceeds the cap.
    pub(crate) async fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut inner = self.inner.lock().await;
        let room = inner.cap.saturating_sub(inner.written);
        let take = usize::try_from(room).unwrap_or(usize::MAX).min(bytes.len());
        if take > 0 {
            inner.file.write_all(&bytes[..take]).await?;
            inner.written += take as u64;
        }
        inner.discarded += (bytes.len() - take) as u64;
        Ok(())
    }

    /// Writes the truncation marker if anything was dropped, and flushes.
    pub(crate) async fn finish(&self) -> std::io::Result<u64> {
        let mut inner = self.inner.lock().await;
        if inner.discarded > 0 {
            let marker = format!(
                "\n[hyoka: output.log truncated at {} bytes; {} more bytes discarded]\n",
                inner.cap, inner.discarded
            );
            inner.file.write_all(marker.as_bytes()).await?;
        }
        inner.file.flush().await?;
        // An empty log has no data to lose: the directory's sync before `report.json` (see
        // `records`) makes its name durable.
        if inner.written > 0 || inner.discarded > 0 {
            inner.file.sync_all().await?;
        }
        Ok(inner.written + inner.discarded)
    }
}
