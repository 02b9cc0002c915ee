//! The one place the server reads the wall clock; the core is handed `now`.
//! (Durations are measured with `Instant`, which is not the wall clock.)

use runboard::Timestamp;

pub fn now() -> Timestamp {
    Timestamp(now_ns().div_euclid(1_000_000) as i64)
}

/// Nanoseconds since the epoch: for comparing with a file's modification
/// time, and for marks that must differ between two runs a moment apart.
pub fn now_ns() -> i128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128)
}
