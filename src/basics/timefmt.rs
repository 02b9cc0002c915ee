//! Timestamps in records and on pages.
//!
//! Records carry RFC 3339 UTC strings (`2026-11-30T09:41:07.123Z`); in memory a
//! [`Timestamp`] is whole milliseconds since the Unix epoch, which is cheap to
//! compare, to send to the browser, and to compute with when `now` is passed in.

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Milliseconds since 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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

    /// The UTC day (`2026-12-01`): the key of every per-day count (the
    /// autopilot's launches, the day's spend).
    pub fn day_key(self) -> String {
        self.to_rfc3339().chars().take(10).collect()
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

    /// The start of this instant's UTC day (midnight).
    pub const fn utc_day_start(self) -> Self {
        Self(self.0.div_euclid(86_400_000) * 86_400_000)
    }

    /// The next UTC midnight after this instant.
    pub const fn next_utc_midnight(self) -> Self {
        Self(self.utc_day_start().0 + 86_400_000)
    }

    /// `2026-11-30 09:41:07 UTC`: the one time format of every page and CLI
    /// line — to the second, its zone always written.
    pub fn to_display(self) -> String {
        let full = self.to_rfc3339();
        if full.len() >= 19 && !full.starts_with('@') {
            format!("{} {} UTC", &full[..10], &full[11..19])
        } else {
            full
        }
    }
}

/// An RFC 3339 text (as records hold it) in the one display format; text
/// that does not parse is shown as it is.
pub fn display_rfc3339(text: &str) -> String {
    Timestamp::parse_rfc3339(text).map_or_else(|| text.to_owned(), Timestamp::to_display)
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

/// Serde for a [`Timestamp`] kept in a record as RFC 3339 text (what every
/// record runboard writes carries; the API sends milliseconds). Reading also
/// accepts milliseconds.
pub mod rfc3339 {
    use super::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&t.to_rfc3339())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Text(String),
            Millis(i64),
        }
        match Either::deserialize(d)? {
            Either::Millis(ms) => Ok(Timestamp(ms)),
            Either::Text(t) => Timestamp::parse_rfc3339(&t)
                .ok_or_else(|| serde::de::Error::custom(format!("{t:?} is not an RFC 3339 timestamp"))),
        }
    }

    /// A map of timestamps, each as RFC 3339.
    pub mod map {
        use std::collections::BTreeMap;

        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        use super::super::Timestamp;

        pub fn serialize<S: Serializer>(m: &BTreeMap<String, Timestamp>, s: S) -> Result<S::Ok, S::Error> {
            m.iter().map(|(k, t)| (k, t.to_rfc3339())).collect::<BTreeMap<_, _>>().serialize(s)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Timestamp>, D::Error> {
            BTreeMap::<String, String>::deserialize(d)?
                .into_iter()
                .map(|(k, t)| match Timestamp::parse_rfc3339(&t) {
                    Some(t) => Ok((k, t)),
                    None => Err(serde::de::Error::custom(format!("{k}: {t:?} is not an RFC 3339 timestamp"))),
                })
                .collect()
        }
    }

    /// The same for an optional timestamp (`null` when absent).
    pub mod option {
        use super::Timestamp;
        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => s.serialize_str(&t.to_rfc3339()),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
            #[derive(Deserialize)]
            struct Wrap(#[serde(with = "super")] Timestamp);
            Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
        }
    }
}

/// A duration in seconds in words: "45 s", "12 min", "3 h 20 min".
pub fn duration_words(secs: f64) -> String {
    let s = if secs.is_finite() { secs.max(0.0).round() as u64 } else { 0 };
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        _ if (s % 3600) / 60 == 0 => format!("{} h", s / 3600),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// A measured duration in words: like [`duration_words`], but a short one
/// keeps its fraction ("0.09 s", "4.5 s"), so fast cells do not all read "0 s".
pub fn span_words(secs: f64) -> String {
    match secs {
        s if !s.is_finite() || s < 0.0 => "0 s".into(),
        s if s < 1.0 => format!("{s:.2} s"),
        s if s < 10.0 => format!("{s:.1} s"),
        s => duration_words(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_carry_rfc3339_and_read_milliseconds_too() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct R {
            #[serde(with = "rfc3339")]
            at: Timestamp,
            #[serde(default, with = "rfc3339::option")]
            end: Option<Timestamp>,
        }
        let r = R { at: Timestamp(1_764_582_067_123), end: None };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(text, r#"{"at":"2025-12-01T09:41:07.123Z","end":null}"#);
        assert_eq!(serde_json::from_str::<R>(&text).unwrap(), r);
        let old: R = serde_json::from_str(r#"{"at": 5, "end": "2025-12-01T09:41:07.123Z"}"#).unwrap();
        assert_eq!((old.at, old.end), (Timestamp(5), Some(Timestamp(1_764_582_067_123))));
        assert!(serde_json::from_str::<R>(r#"{"at": "yesterday"}"#).is_err());
    }

    #[test]
    fn durations_read_in_the_largest_units() {
        let got: Vec<String> = [45.0, 720.0, 12_000.0, 7200.0, f64::NAN].map(duration_words).to_vec();
        assert_eq!(got, ["45 s", "12 min", "3 h 20 min", "2 h", "0 s"]);
    }

    #[test]
    fn rfc3339_round_trips_in_utc() {
        let t = Timestamp::parse_rfc3339("2026-11-30T09:41:07.123Z").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-30T09:41:07.123Z");
        assert_eq!(t.to_display(), "2026-11-30 09:41:07 UTC");
        assert_eq!(display_rfc3339("2026-11-30T09:41:07.250Z"), "2026-11-30 09:41:07 UTC");
        assert_eq!(display_rfc3339("yesterday"), "yesterday", "what does not parse is shown as written");
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

    #[test]
    fn a_short_span_keeps_its_fraction() {
        assert_eq!(span_words(0.093), "0.09 s");
        assert_eq!(span_words(4.54), "4.5 s");
        assert_eq!(span_words(75.0), "1 min");
        assert_eq!(span_words(f64::NAN), "0 s");
    }
}
