//! Run and eval identifiers, validated once so they are safe in paths and file names.

use std::fmt;
use std::str::FromStr;

use crate::WorkspaceError;

/// The longest id accepted, in bytes.
pub const MAX_ID_LEN: usize = 64;

/// A validated run id: `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
///
/// Ids become directory names (`reports/<run_id>`, `hyoka-<run_id>-XXXXXX`), so the rule
/// excludes separators, `..`, leading dots and dashes, whitespace and anything non-ASCII.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(String);

/// A validated eval id, with the same rule as [`RunId`]. A single-command run uses `main`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EvalId(String);

fn validate(kind: &'static str, id: &str) -> Result<(), WorkspaceError> {
    let reject = |reason| {
        Err(WorkspaceError::InvalidId {
            kind,
            id: id.to_owned(),
            reason,
        })
    };
    let Some(first) = id.bytes().next() else {
        return reject("must not be empty");
    };
    if id.len() > MAX_ID_LEN {
        return reject("must be at most 64 characters");
    }
    if !first.is_ascii_alphanumeric() {
        return reject("must start with a letter or digit");
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return reject("may contain only letters, digits, '.', '_' and '-'");
    }
    Ok(())
}

macro_rules! id_type {
    ($ty:ident, $kind:literal) => {
        impl $ty {
            /// Validates `id` and wraps it.
            ///
            /// # Errors
            /// [`WorkspaceError::InvalidId`] when `id` breaks the rule.
            pub fn new(id: impl Into<String>) -> Result<Self, WorkspaceError> {
                let id = id.into();
                validate($kind, &id)?;
                Ok(Self(id))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $ty {
            type Err = WorkspaceError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::new(s)
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

id_type!(RunId, "run");
id_type!(EvalId, "eval");

impl EvalId {
    /// The eval id of a single-command run.
    pub fn main() -> Self {
        Self("main".to_owned())
    }
}

#[cfg(test)]
mod tests;
