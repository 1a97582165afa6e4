//! `output.log`: the agent's stdout and stderr, interleaved as they arrive, capped; and the
//! bounded wait for the pumps that fill it.

use std::path::{Path, PathBuf};
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
    /// `None` until a lazy log is first written to.
    file: Option<tokio::fs::File>,
    path: PathBuf,
    written: u64,
    discarded: u64,
    cap: u64,
}

impl CappedLog {
    /// Creates (truncates) the log at `path`.
    pub(crate) async fn create(path: &Path, cap: u64) -> std::io::Result<Self> {
        let file = tokio::fs::File::create(path).await?;
        Ok(Self::with(path, Some(file), cap))
    }

    /// The log at `path`, created (truncated) by the first byte written to it: a phase that
    /// prints nothing (most scorers) leaves no empty file, and one of an earlier attempt is
    /// removed when it ends. For the logs the records may lack (`build.log`, `review.log`);
    /// `output.log` is always there.
    pub(crate) fn lazy(path: &Path, cap: u64) -> Self {
        Self::with(path, None, cap)
    }

    fn with(path: &Path, file: Option<tokio::fs::File>, cap: u64) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                file,
                path: path.to_owned(),
                written: 0,
                discarded: 0,
                cap,
            })),
        }
    }

    /// Appends `bytes`, dropping whatever exceeds the cap.
    pub(crate) async fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut inner = self.inner.lock().await;
        let room = inner.cap.saturating_sub(inner.written);
        let take = usize::try_from(room).unwrap_or(usize::MAX).min(bytes.len());
        if take > 0 {
            inner.file().await?.write_all(&bytes[..take]).await?;
            inner.written += take as u64;
        }
        inner.discarded += (bytes.len() - take) as u64;
        Ok(())
    }

    /// Writes the truncation marker if anything was dropped, and flushes. A lazy log that
    /// nothing was written to is not created (and an earlier attempt's is removed).
    pub(crate) async fn finish(&self) -> std::io::Result<u64> {
        let mut inner = self.inner.lock().await;
        if inner.file.is_none() && inner.discarded == 0 {
            return match tokio::fs::remove_file(&inner.path).await {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(0),
            };
        }
        if inner.discarded > 0 {
            let marker = format!(
                "\n[hyoka: output.log truncated at {} bytes; {} more bytes discarded]\n",
                inner.cap, inner.discarded
            );
            inner.file().await?.write_all(marker.as_bytes()).await?;
        }
        let (written, discarded) = (inner.written, inner.discarded);
        let file = inner.file().await?;
        file.flush().await?;
        // An empty log has no data to lose: the directory's sync before `report.json` (see
        // `records`) makes its name durable.
        if written > 0 || discarded > 0 {
            file.sync_all().await?;
        }
        Ok(written + discarded)
    }
}

impl Inner {
    /// The file, created on first use.
    async fn file(&mut self) -> std::io::Result<&mut tokio::fs::File> {
        if self.file.is_none() {
            self.file = Some(tokio::fs::File::create(&self.path).await?);
        }
        Ok(self.file.as_mut().expect("just created"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_lazy_log_exists_only_once_written_to() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("review.log");
        std::fs::write(&path, "an earlier attempt's").unwrap();
        let silent = CappedLog::lazy(&path, 8);
        assert_eq!(silent.finish().await.unwrap(), 0);
        assert!(
            !path.exists(),
            "nothing written: no file, the stale one removed"
        );

        let loud = CappedLog::lazy(&path, 8);
        assert!(!path.exists(), "not created before the first byte");
        loud.write(b"0123456789").await.unwrap();
        assert_eq!(loud.finish().await.unwrap(), 10);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("01234567\n[hyoka: output.log truncated at 8 bytes; 2 more"),
            "{text}"
        );
    }
}
