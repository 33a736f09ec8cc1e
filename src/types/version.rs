//! Versions: ordered signals that say which of two revisions of a document is newer.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a version number comes from. One document uses one kind for its whole life;
/// mixing kinds on a document is an error, never a silent skip.
///
/// An opaque etag or a content hash is deliberately not a kind: it can say that two
/// revisions differ but never which one is newer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum VersionKind {
    /// A revision number issued by the source (a wiki revision id, a row version).
    Number,
    /// The source's own modification time, in microseconds since the Unix epoch.
    /// Compare source times, never write times.
    TimestampMicros,
    /// A ticket issued by [`Store::ticket`](crate::Store::ticket) when the job was enqueued.
    Ticket,
}

impl VersionKind {
    pub(crate) fn to_byte(self) -> u8 {
        match self {
            VersionKind::Number => 0,
            VersionKind::TimestampMicros => 1,
            VersionKind::Ticket => 2,
        }
    }

    pub(crate) fn from_byte(byte: u8) -> Option<VersionKind> {
        match byte {
            0 => Some(VersionKind::Number),
            1 => Some(VersionKind::TimestampMicros),
            2 => Some(VersionKind::Ticket),
            _ => None,
        }
    }

    /// The name used in JSON and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            VersionKind::Number => "number",
            VersionKind::TimestampMicros => "timestamp_micros",
            VersionKind::Ticket => "ticket",
        }
    }
}

impl fmt::Display for VersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A document version: an ordered `u64` together with the kind of signal it is.
///
/// Versions of the same kind compare by value. Versions of different kinds are not
/// comparable; the store refuses to compare them (see
/// [`WriteError::VersionKindMismatch`](crate::WriteError::VersionKindMismatch)).
///
/// ```
/// use ratchetdb::Version;
/// assert!(Version::number(7).value > Version::number(6).value);
/// assert_eq!(Version::timestamp_micros(1_700_000_000_000_000).kind.as_str(), "timestamp_micros");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Version {
    /// What the number means.
    pub kind: VersionKind,
    /// The number; larger is newer.
    pub value: u64,
}

impl Version {
    /// A source revision number.
    pub fn number(value: u64) -> Version {
        Version {
            kind: VersionKind::Number,
            value,
        }
    }

    /// A source modification time in microseconds since the Unix epoch.
    pub fn timestamp_micros(value: u64) -> Version {
        Version {
            kind: VersionKind::TimestampMicros,
            value,
        }
    }

    /// A store-issued ticket (normally obtained from [`Store::ticket`](crate::Store::ticket)).
    pub fn ticket(value: u64) -> Version {
        Version {
            kind: VersionKind::Ticket,
            value,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.value)
    }
}
