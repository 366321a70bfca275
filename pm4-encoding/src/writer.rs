//! Emitting packets into caller-provided storage.

use crate::packet::Emit;

/// The caller's buffer cannot hold the next packet. Nothing was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("command buffer full: {needed} dwords needed at dword {used}, capacity {capacity}")]
pub struct CapacityError {
    /// Dwords the packet needs.
    pub needed: usize,
    /// Dwords already written.
    pub used: usize,
    /// Buffer capacity in dwords.
    pub capacity: usize,
}

/// Appends packets to a `&mut [u32]`, checking capacity before every write.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u32],
    len: usize,
}

impl<'a> Writer<'a> {
    /// A writer at the start of `buf`.
    #[must_use]
    pub fn new(buf: &'a mut [u32]) -> Self {
        Self { buf, len: 0 }
    }

    /// Appends one packet and returns the dword offset it starts at.
    ///
    /// # Errors
    /// [`CapacityError`] when the packet does not fit; the buffer is unchanged.
    #[inline(always)]
    pub fn emit<P: Emit + ?Sized>(&mut self, packet: &P) -> Result<usize, CapacityError> {
        let needed = packet.buffer_len();
        let start = self.len;
        let Some(out) = self.buf.get_mut(start..start.saturating_add(needed)) else {
            return Err(CapacityError { needed, used: start, capacity: self.buf.len() });
        };
        packet.emit(out);
        self.len = start + needed;
        Ok(start)
    }

    /// Dwords written so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Dwords still free.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.len
    }

    /// The written dwords.
    #[must_use]
    pub fn as_slice(&self) -> &[u32] {
        &self.buf[..self.len]
    }

    /// Ends writing and returns the number of dwords written.
    #[must_use]
    pub fn finish(self) -> usize {
        self.len
    }
}
