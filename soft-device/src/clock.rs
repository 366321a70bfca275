//! The soft device's GPU clock: what PM4 timestamps read (`COPY_DATA` `SRC_SEL` 9, `RELEASE_MEM`
//! `DATA_SEL` 3; reference §4 "COPY_DATA" and "RELEASE_MEM").
//!
//! A read is the time elapsed on the host's monotonic clock since the clock's origin, in ticks of
//! [`GpuClock::FREQUENCY_HZ`] (10 ns), taken when the command processor executes the packet. So
//! the difference of two timestamps of one IB is the host time the soft device spent between the
//! two packets: the dispatches it ran in between (their CPU references), the packets it decoded,
//! and anything else that shared the CPU meanwhile. Two reads are never equal: a read less than a
//! tick after the previous one returns one tick more than it (the clock runs ahead of the host's
//! by at most one tick per read within a tick, and falls back in step once a tick has passed).
//! The soft HSA runtime gives its command processors a clock with the runtime's start as origin,
//! so that its timestamps and `HSA_SYSTEM_INFO_TIMESTAMP` count the same ticks.

use std::time::Instant;

/// A GPU clock: host-monotonic ticks of [`GpuClock::FREQUENCY_HZ`] since an origin.
#[derive(Clone, Copy, Debug)]
pub struct GpuClock {
    origin: Instant,
    last: u64,
}

impl GpuClock {
    /// Ticks per second (10 ns ticks): the rate the soft device reports as its timestamp
    /// frequency (`hal::Device::timestamp_frequency_hz`), and the soft HSA runtime as
    /// `HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`.
    pub const FREQUENCY_HZ: u64 = 100_000_000;
    /// Nanoseconds per tick.
    const TICK_NS: u128 = 1_000_000_000 / Self::FREQUENCY_HZ as u128;

    /// A clock whose origin is now.
    #[must_use]
    pub fn new() -> Self {
        Self::since(Instant::now())
    }

    /// A clock whose origin is `origin`.
    #[must_use]
    pub fn since(origin: Instant) -> Self {
        Self { origin, last: 0 }
    }

    /// Ticks since the origin now, at least one more than the previous read.
    pub fn read(&mut self) -> u64 {
        let now = u64::try_from(self.origin.elapsed().as_nanos() / Self::TICK_NS).unwrap_or(u64::MAX);
        self.last = now.max(self.last.saturating_add(1));
        self.last
    }

    /// The value of the last read (0 before any).
    #[must_use]
    pub fn last(&self) -> u64 {
        self.last
    }
}

impl Default for GpuClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A fake counter (one tick per read) fails this: 20 ms of host time is 2,000,000 ticks.
    #[test]
    fn reads_follow_the_host_clock_in_ticks_of_the_frequency() {
        let mut clock = GpuClock::new();
        let before = Instant::now();
        let t0 = clock.read();
        std::thread::sleep(Duration::from_millis(20));
        let t1 = clock.read();
        let elapsed_ticks = u64::try_from(before.elapsed().as_nanos() / 10).unwrap();
        assert!(t1 - t0 >= 2_000_000, "{t0} -> {t1}: 20 ms is at least 2,000,000 ticks of 10 ns");
        assert!(t1 - t0 <= elapsed_ticks + 1, "{t0} -> {t1}: not more than the host's {elapsed_ticks} ticks");
        assert_eq!(clock.last(), t1);
    }

    #[test]
    fn reads_never_repeat() {
        let mut clock = GpuClock::new();
        let reads: Vec<u64> = (0..1000).map(|_| clock.read()).collect();
        assert!(reads.windows(2).all(|w| w[1] > w[0]));
    }
}
