//! The one place the server reads the wall clock; the core is handed `now`.

use runboard::Timestamp;

pub fn now() -> Timestamp {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Timestamp(since.as_millis() as i64)
}
