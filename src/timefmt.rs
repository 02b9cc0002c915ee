//! Timestamps in records and on pages.
//!
//! Records carry RFC 3339 UTC strings (`2026-11-30T09:41:07.123Z`); in memory a
//! [`Timestamp`] is whole milliseconds since the Unix epoch, which is cheap to
//! compare, to send to the browser, and to compute with when `now` is passed in.

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Milliseconds since 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms)
    }

    pub const fn millis(self) -> i64 {
        self.0
    }

    /// Parses an RFC 3339 timestamp (any offset); `None` when it is not one.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let dt = OffsetDateTime::parse(text.trim(), &Rfc3339).ok()?;
        Some(Self((dt.unix_timestamp_nanos() / 1_000_000) as i64))
    }

    /// RFC 3339 in UTC with millisecond precision, as records are written.
    pub fn to_rfc3339(self) -> String {
        match OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000_000) {
            Ok(dt) => {
                let (y, mo, d) = (dt.year(), dt.month() as u8, dt.day());
                let (h, mi, s, ms) = (dt.hour(), dt.minute(), dt.second(), dt.millisecond());
                format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
            }
            Err(_) => format!("@{}ms", self.0),
        }
    }

    /// `2026-11-30 09:41:07` (UTC), for tables.
    pub fn to_display(self) -> String {
        let full = self.to_rfc3339();
        if full.len() >= 19 && !full.starts_with('@') {
            format!("{} {}", &full[..10], &full[11..19])
        } else {
            full
        }
    }
}

/// "5 s ago", "3 min ago", "2 h ago", "4 d ago": how long before `now` `then` was.
pub fn ago(then: Timestamp, now: Timestamp) -> String {
    let delta = now.0 - then.0;
    if delta < 0 {
        return "just now".to_owned();
    }
    let secs = delta / 1000;
    match secs {
        0..=59 => format!("{secs} s ago"),
        60..=3599 => format!("{} min ago", secs / 60),
        3600..=86_399 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips_in_utc() {
        let t = Timestamp::parse_rfc3339("2026-11-30T09:41:07.123Z").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-30T09:41:07.123Z");
        assert_eq!(t.to_display(), "2026-11-30 09:41:07");
    }

    #[test]
    fn offsets_are_normalised_to_utc() {
        let t = Timestamp::parse_rfc3339("2026-11-30T10:41:07+01:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-30T09:41:07.000Z");
    }

    #[test]
    fn garbage_is_not_a_timestamp() {
        for text in ["", "yesterday", "2026-13-01T00:00:00Z", "2026-11-30"] {
            assert_eq!(Timestamp::parse_rfc3339(text), None, "{text:?}");
        }
    }

    #[test]
    fn ago_uses_the_largest_whole_unit() {
        let now = Timestamp(10_000_000_000);
        let cases = [(5_000, "5 s ago"), (180_000, "3 min ago"), (7_200_000, "2 h ago"), (4 * 86_400_000, "4 d ago")];
        for (delta, want) in cases {
            assert_eq!(ago(Timestamp(now.0 - delta), now), want);
        }
        assert_eq!(ago(Timestamp(now.0 + 5), now), "just now");
    }
}
