//! One opened entry of a reports directory as evidence: the checks it passes (its type, that
//! no one but its owner may write it, who owns it) and the bounded read of a file, shared by
//! the ledger's reader and the run directory checks of `trust.rs`.

use std::os::fd::BorrowedFd;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags, Stat};

use crate::ProcTrackError;

/// The largest ledger that is read (8 MiB, about 170,000 process lines). A ledger hyoka
/// wrote never needs more than a few MB; a larger file is refused as hostile.
pub const MAX_LEDGER_BYTES: u64 = 8 << 20;

/// Checks one directory entry that was opened (without following a link) as part of a run:
/// its type, that no one but its owner may write it, and, with `owner`, who owns it.
pub(crate) fn check_entry(
    stat: &Stat,
    path: &Path,
    directory: bool,
    owner: Option<u32>,
) -> Result<(), ProcTrackError> {
    let kind = FileType::from_raw_mode(stat.st_mode);
    let reason = if directory && kind != FileType::Directory {
        Some("is not a directory".to_owned())
    } else if !directory && kind != FileType::RegularFile {
        Some("is not a regular file".to_owned())
    } else if stat.st_mode & 0o022 != 0 {
        Some(format!(
            "is writable by others than its owner (mode {:o})",
            stat.st_mode & 0o7777
        ))
    } else {
        owner.filter(|&o| o != stat.st_uid).map(|owner| {
            format!(
                "belongs to user {}, not to user {owner} who owns the run directory",
                stat.st_uid
            )
        })
    };
    match reason {
        Some(reason) => Err(ProcTrackError::Untrusted {
            path: path.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Reads the regular file `name` in the directory `dir` (named `path` in errors) without
/// following a link at `name` and without blocking on a FIFO or a device, up to
/// [`MAX_LEDGER_BYTES`]. With `owner`, the file must belong to that user and be writable by
/// nobody else.
pub(crate) fn read_bounded_at(
    dir: BorrowedFd<'_>,
    name: &Path,
    path: &Path,
    owner: Option<u32>,
) -> Result<Vec<u8>, ProcTrackError> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        if e == rustix::io::Errno::LOOP {
            untrusted(path, "is a symbolic link")
        } else {
            ProcTrackError::io("open", path, e.into())
        }
    })?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| ProcTrackError::io("inspect", path, e.into()))?;
    check_entry(&stat, path, false, owner)?;
    let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
    if size > MAX_LEDGER_BYTES {
        return Err(untrusted(
            path,
            &format!(
                "is {size} bytes, more than the {MAX_LEDGER_BYTES} a ledger hyoka writes may have"
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match rustix::io::read(&fd, &mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                bytes.extend_from_slice(&chunk[..n]);
                if bytes.len() as u64 > MAX_LEDGER_BYTES {
                    return Err(untrusted(path, "grew past the size a ledger may have"));
                }
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(ProcTrackError::io("read", path, e.into())),
        }
    }
    Ok(bytes)
}

fn untrusted(path: &Path, reason: &str) -> ProcTrackError {
    ProcTrackError::Untrusted {
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}
