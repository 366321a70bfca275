//! Times as the report writes them: RFC 3339 UTC with seconds, from the system clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now as RFC 3339 UTC with seconds (`2026-12-01T03:17:29Z`).
#[must_use]
pub fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    utc_from_unix(secs)
}

/// RFC 3339 UTC of a Unix time (Howard Hinnant's days-to-civil algorithm).
#[must_use]
pub fn utc_from_unix(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// A file-name-safe form of an RFC 3339 time (`20261201T031729Z`).
#[must_use]
pub fn utc_stamp(utc: &str) -> String {
    utc.chars().filter(|c| *c != '-' && *c != ':').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting_matches_known_instants() {
        assert_eq!(utc_from_unix(0), "1970-01-01T00:00:00Z");
        // `date -u -d @1796095049` → Tue Dec  1 03:17:29 UTC 2026.
        assert_eq!(utc_from_unix(1_796_095_049), "2026-12-01T03:17:29Z");
        assert_eq!(utc_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_stamp("2026-12-01T03:17:29Z"), "20261201T031729Z");
    }
}
