//! Wall-clock helpers: milliseconds since the epoch, and RFC 3339 timestamps (UTC, to the
//! millisecond) as seed 001 writes `startedAt`.

use std::time::{SystemTime, UNIX_EPOCH};

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `2024-01-01T00:00:00.000Z`, now.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_known_instants() {
        let at = |ms: u64| {
            humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
        };
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(1_704_067_200_000), "2024-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(now_rfc3339().len(), "2024-01-01T00:00:00.000Z".len());
    }
}
