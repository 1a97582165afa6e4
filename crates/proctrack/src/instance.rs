//! The run instance: a random token that names one run apart from every other, also from a
//! run with the same run id in another reports directory.
//!
//! Run ids are chosen by users and unique only within one reports directory, so nothing that
//! `clean` acts on may be keyed by the run id alone. The instance token keys the process
//! marker ([`EnvVars::HYOKA_RUN_INSTANCE`]), the cgroup leaf, the workspace marker and the
//! ledger's `# instance` header.

use std::fmt::{self, Write as _};
use std::str::FromStr;

use serde::Serialize;

use crate::ProcTrackError;
use crate::env_vars::EnvVars;

/// The token's length: 16 lowercase hex digits, 64 random bits.
const LEN: usize = 16;

/// A run instance token: 16 lowercase hex digits drawn from the kernel's random source when
/// the run starts.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Instance(String);

impl Instance {
    /// A fresh token from `getrandom(2)`.
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] when the kernel's random source fails.
    pub fn generate() -> Result<Self, ProcTrackError> {
        let mut bytes = [0u8; LEN / 2];
        let mut filled = 0;
        while filled < bytes.len() {
            let rest = &mut bytes[filled..];
            // SAFETY: the pointer and length describe `rest`, a live, writable buffer.
            let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
            if let Ok(n) = usize::try_from(n) {
                filled += n;
            } else {
                let error = std::io::Error::last_os_error();
                if error.kind() != std::io::ErrorKind::Interrupted {
                    return Err(ProcTrackError::io("read", "getrandom", error));
                }
            }
        }
        let mut token = String::with_capacity(LEN);
        for b in bytes {
            let _ = write!(token, "{b:02x}");
        }
        Ok(Self(token))
    }

    /// Validates `text` as a token.
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidIdentity`] unless it is 16 lowercase hex digits.
    pub fn new(text: &str) -> Result<Self, ProcTrackError> {
        let ok = text.len() == LEN
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if ok {
            Ok(Self(text.to_owned()))
        } else {
            Err(ProcTrackError::InvalidIdentity {
                text: text.to_owned(),
                reason: "an instance token is 16 lowercase hex digits",
            })
        }
    }

    /// The token.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The environment entry `HYOKA_RUN_INSTANCE=<token>`.
    pub fn env_entry(&self) -> String {
        format!("{}={}", EnvVars::HYOKA_RUN_INSTANCE, self.0)
    }
}

impl fmt::Display for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Instance({})", self.0)
    }
}

impl FromStr for Instance {
    type Err = ProcTrackError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::new(text)
    }
}

#[cfg(test)]
mod tests;
