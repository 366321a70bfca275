//! The wall clock, for response ids and `created`, history times and fresh seeds.

use std::time::Duration;

/// The wall clock since the Unix epoch (zero if the clock is before it): response ids and
/// `created`, history times, fresh seeds.
pub(crate) fn since_epoch() -> Duration {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default()
}

/// Whole seconds since the Unix epoch.
pub(crate) fn unix_seconds() -> u64 {
    since_epoch().as_secs()
}
