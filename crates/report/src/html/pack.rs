//! Packing the page's data: JSON, gzip-compressed on every core, in base64.

use std::io::Write;

use base64::Engine;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde::Serialize;

use crate::error::ReportError;

/// Trials per compressed chunk: large enough to compress well, small enough to inflate in a
/// few milliseconds when one trial is opened.
pub(super) const CHUNK: usize = 64;

/// Packs trial details into chunks of [`CHUNK`] trials, each a JSON array, compressed
/// with gzip on every core at the end.
#[derive(Default)]
pub(super) struct Packer {
    current: Vec<u8>,
    in_current: usize,
    done: Vec<Vec<u8>>,
}

impl Packer {
    pub(super) fn push(&mut self, detail: &impl Serialize) -> Result<(), ReportError> {
        // Serialized into memory first: serde's many small writes straight into the
        // encoder cost more than the compression itself.
        self.current
            .push(if self.in_current == 0 { b'[' } else { b',' });
        serde_json::to_writer(&mut self.current, detail)
            .map_err(|e| ReportError::Encode { source: e.into() })?;
        self.in_current += 1;
        if self.in_current == CHUNK {
            self.flush();
        }
        Ok(())
    }

    fn flush(&mut self) {
        if self.in_current > 0 {
            self.current.push(b']');
            self.done.push(std::mem::take(&mut self.current));
        }
        self.in_current = 0;
    }

    pub(super) fn finish(mut self) -> Result<Vec<String>, ReportError> {
        self.flush();
        let workers = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let per = self.done.len().div_ceil(workers).max(1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .done
                .chunks(per)
                .map(|part| {
                    scope.spawn(move || part.iter().map(|raw| gzip64(raw)).collect::<Vec<_>>())
                })
                .collect();
            let mut out = Vec::with_capacity(self.done.len());
            for handle in handles {
                let part = handle.join().map_err(|_| ReportError::Encode {
                    source: std::io::Error::other("a compression thread panicked"),
                })?;
                for chunk in part {
                    out.push(chunk?);
                }
            }
            Ok(out)
        })
    }
}

/// Gzip, then base64, of `raw`.
fn gzip64(raw: &[u8]) -> Result<String, ReportError> {
    let encode = |source| ReportError::Encode { source };
    let mut writer = GzEncoder::new(Vec::with_capacity(raw.len() / 4), Compression::default());
    writer.write_all(raw).map_err(encode)?;
    let bytes = writer.finish().map_err(encode)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Gzip and base64 of `value` as JSON.
pub(super) fn pack(value: &impl Serialize) -> Result<String, ReportError> {
    let raw = serde_json::to_vec(value).map_err(|e| ReportError::Encode { source: e.into() })?;
    gzip64(&raw)
}
