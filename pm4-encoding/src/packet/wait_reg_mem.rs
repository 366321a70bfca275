//! `WAIT_REG_MEM` (0x3C): stall the queue until a register or memory dword compares true.
//!
//! Body (reference §4 "WAIT_REG_MEM"), 6 dwords: dw0 control (`FUNCTION`, `MEM_SPACE`,
//! `OPERATION`, `ENGINE`, `CACHE_POLICY`), dw1 `POLL_ADDRESS_LO` (memory, dword aligned) or the
//! register, dw2 `POLL_ADDRESS_HI` (or the second register of `WR_WAIT_WR_REG`), dw3 `REFERENCE`,
//! dw4 `MASK`, dw5 `POLL_INTERVAL`. The CP compares `(value & MASK)` against `REFERENCE`.

use crate::disasm::Visitor;
use crate::header::{HeaderFlags, Type3Header};
use crate::opcode::Opcode;
use crate::packet::{Emit, NO_FLAGS, PacketError, check_aligned, join_u64, split_u64};

mod field {
    /// Body dwords.
    pub(super) const BODY_DWORDS: usize = 6;
    pub(super) const CONTROL: usize = 0;
    pub(super) const POLL_ADDRESS_LO: usize = 1;
    pub(super) const POLL_ADDRESS_HI: usize = 2;
    pub(super) const REFERENCE: usize = 3;
    pub(super) const MASK: usize = 4;
    pub(super) const POLL_INTERVAL: usize = 5;
    /// Memory polls: `POLL_ADDRESS_LO` bits `[1:0]` must be zero.
    pub(super) const ADDRESS_ALIGN_MASK: u32 = 0b11;
    /// Register polls: the register is a dword offset in bits `[17:0]`.
    pub(super) const REG_MAX: u32 = (1 << 18) - 1;
}

crate::bitfield32! {
    /// `WAIT_REG_MEM` body dword 0.
    pub struct WaitRegMemControl {
        /// Comparison, raw ([`Function`]).
        [2:0] function_raw, with_function_raw = "FUNCTION";
        /// What is polled, raw ([`MemSpace`]).
        [5:4] mem_space_raw, with_mem_space_raw = "MEM_SPACE";
        /// Operation, raw ([`Operation`]).
        [7:6] operation_raw, with_operation_raw = "OPERATION";
        /// 0 ME, 1 PFP (compute queues: 0).
        [8] engine, with_engine = "ENGINE";
        /// Cache policy / temporal hint; 0.
        [26:25] cache_policy, with_cache_policy = "CACHE_POLICY";
    }
}

crate::bitfield32! {
    /// `WAIT_REG_MEM` body dword 5.
    pub struct WaitRegMemPollInterval {
        /// Poll interval (Linux: 4 for fence waits, 0x20 for register waits; Mesa: 4).
        [15:0] poll_interval, with_poll_interval = "POLL_INTERVAL";
        /// ACE offload mode optimisation.
        [31] optimize_ace_offload_mode, with_optimize_ace_offload_mode = "OPTIMIZE_ACE_OFFLOAD_MODE";
    }
}

field_enum! {
    /// `FUNCTION`: how `(value & MASK)` is compared with `REFERENCE`.
    pub enum Function(u32) {
        /// Always true.
        Always = 0 => "ALWAYS",
        /// `<`.
        Less = 1 => "<",
        /// `<=`.
        LessEqual = 2 => "<=",
        /// `==`.
        Equal = 3 => "==",
        /// `!=`.
        NotEqual = 4 => "!=",
        /// `>=`.
        GreaterEqual = 5 => ">=",
        /// `>`.
        Greater = 6 => ">",
    }
}

field_enum! {
    /// `MEM_SPACE`: what dw1..2 address.
    pub enum MemSpace(u32) {
        /// A register.
        Register = 0 => "REGISTER",
        /// Memory.
        Memory = 1 => "MEMORY",
    }
}

field_enum! {
    /// `OPERATION`.
    pub enum Operation(u32) {
        /// Wait on the register or memory dword.
        WaitRegMem = 0 => "WAIT_REG_MEM",
        /// Write a register, then wait on another.
        WrWaitWrReg = 1 => "WR_WAIT_WR_REG",
        /// Preemptable memory wait.
        WaitMemPreemptable = 3 => "WAIT_MEM_PREEMPTABLE",
    }
}

impl WaitRegMemControl {
    /// `FUNCTION`.
    #[must_use]
    pub const fn function(self) -> Function {
        Function::from_raw(self.function_raw())
    }

    /// `MEM_SPACE`.
    #[must_use]
    pub const fn mem_space(self) -> MemSpace {
        MemSpace::from_raw(self.mem_space_raw())
    }

    /// `OPERATION`.
    #[must_use]
    pub const fn operation(self) -> Operation {
        Operation::from_raw(self.operation_raw())
    }
}

/// A validated `WAIT_REG_MEM` packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WaitRegMem {
    /// Header flag bits.
    pub flags: HeaderFlags,
    /// dw0: function, space, operation, engine.
    pub control: WaitRegMemControl,
    /// dw1: low address dword (memory, dword aligned) or the register's dword offset.
    pub poll_address_lo: u32,
    /// dw2: high address dword, or the register `WR_WAIT_WR_REG` writes.
    pub poll_address_hi: u32,
    /// dw3: the value compared against.
    pub reference: u32,
    /// dw4: the mask applied to the polled value.
    pub mask: u32,
    /// dw5: poll interval.
    pub poll_interval: WaitRegMemPollInterval,
}

impl WaitRegMem {
    /// Total dwords of the packet, header included.
    pub const BUFFER_LEN: usize = 1 + field::BODY_DWORDS;

    /// Waits until `(memory[address] & mask) function reference`, polling every
    /// `poll_interval`, on the ME, with default header flags.
    ///
    /// # Errors
    /// [`PacketError::FieldValue`] when `address` is not dword aligned (`POLL_ADDRESS_LO`) or an
    /// `Unknown` function does not fit `FUNCTION`.
    pub const fn memory(
        function: Function,
        address: u64,
        reference: u32,
        mask: u32,
        poll_interval: u16,
    ) -> Result<Self, PacketError> {
        if let Err(e) = check_aligned(Opcode::WaitRegMem, "POLL_ADDRESS_LO", address, field::ADDRESS_ALIGN_MASK) {
            return Err(e);
        }
        let (lo, hi) = split_u64(address);
        Self::with_space(function, MemSpace::Memory, lo, hi, reference, mask, poll_interval)
    }

    /// Waits until `(register[dword] & mask) function reference`, polling every `poll_interval`,
    /// on the ME, with default header flags.
    ///
    /// # Errors
    /// [`PacketError::FieldValue`] when `dword` does not fit 18 bits (`POLL_ADDRESS_LO`) or an
    /// `Unknown` function does not fit `FUNCTION`.
    pub const fn register(
        function: Function,
        dword: u32,
        reference: u32,
        mask: u32,
        poll_interval: u16,
    ) -> Result<Self, PacketError> {
        if dword > field::REG_MAX {
            return Err(PacketError::FieldValue { opcode: Opcode::WaitRegMem, field: "POLL_ADDRESS_LO", value: dword });
        }
        Self::with_space(function, MemSpace::Register, dword, 0, reference, mask, poll_interval)
    }

    const fn with_space(
        function: Function,
        space: MemSpace,
        poll_address_lo: u32,
        poll_address_hi: u32,
        reference: u32,
        mask: u32,
        poll_interval: u16,
    ) -> Result<Self, PacketError> {
        if !crate::bits::fits(function.raw(), 2, 0) {
            return Err(PacketError::FieldValue {
                opcode: Opcode::WaitRegMem,
                field: "FUNCTION",
                value: function.raw(),
            });
        }
        let control = WaitRegMemControl::from_raw(0).with_function_raw(function.raw()).with_mem_space_raw(space.raw());
        Ok(Self {
            flags: NO_FLAGS,
            control,
            poll_address_lo,
            poll_address_hi,
            reference,
            mask,
            // Widening u16 -> u32 (`u32::from` is not callable in a const fn).
            poll_interval: WaitRegMemPollInterval::from_raw(poll_interval as u32),
        })
    }

    /// The polled memory address (dw1..2), meaningful when `MEM_SPACE` is memory.
    #[must_use]
    pub fn poll_address(&self) -> u64 {
        join_u64(self.poll_address_lo, self.poll_address_hi)
    }

    /// Parses a body.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] unless the body is 6 dwords; [`PacketError::FieldValue`]
    /// (`POLL_ADDRESS_LO`) when a memory poll address is not dword aligned.
    pub fn parse(header: Type3Header, body: &[u32]) -> Result<Self, PacketError> {
        let &[control, poll_address_lo, poll_address_hi, reference, mask, poll_interval] = body else {
            return Err(PacketError::BodyLength {
                opcode: Opcode::WaitRegMem,
                expected: field::BODY_DWORDS,
                found: body.len(),
            });
        };
        let control = WaitRegMemControl::from_raw(control);
        if matches!(control.mem_space(), MemSpace::Memory) {
            check_aligned(
                Opcode::WaitRegMem,
                "POLL_ADDRESS_LO",
                u64::from(poll_address_lo),
                field::ADDRESS_ALIGN_MASK,
            )?;
        }
        Ok(Self {
            flags: header.flags(),
            control,
            poll_address_lo,
            poll_address_hi,
            reference,
            mask,
            poll_interval: WaitRegMemPollInterval::from_raw(poll_interval),
        })
    }

    /// Reports the fields.
    pub fn visit(&self, v: &mut dyn Visitor) {
        let c = self.control;
        v.word("CONTROL", c.raw(), WaitRegMemControl::FIELDS);
        v.enum_field("FUNCTION", u64::from(c.function_raw()), c.function().name());
        v.enum_field("MEM_SPACE", u64::from(c.mem_space_raw()), c.mem_space().name());
        v.enum_field("OPERATION", u64::from(c.operation_raw()), c.operation().name());
        if matches!(c.mem_space(), MemSpace::Memory) {
            v.field("POLL_ADDRESS", self.poll_address());
        } else {
            v.field("POLL_REG", u64::from(self.poll_address_lo));
            v.field("REG_WRITE_ADDR", u64::from(self.poll_address_hi));
        }
        v.field("REFERENCE", u64::from(self.reference));
        v.field("MASK", u64::from(self.mask));
        v.word("POLL_INTERVAL", self.poll_interval.raw(), WaitRegMemPollInterval::FIELDS);
    }
}

impl Emit for WaitRegMem {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        Self::BUFFER_LEN
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u32]) {
        // PANIC: the Writer sized `out` from buffer_len(); a mismatch is a programmer error.
        let out: &mut [u32; Self::BUFFER_LEN] = out.try_into().expect("WAIT_REG_MEM needs exactly 7 dwords");
        out[0] = Type3Header::with_flags(Opcode::WaitRegMem, field::BODY_DWORDS, self.flags).encode();
        out[1 + field::CONTROL] = self.control.raw();
        out[1 + field::POLL_ADDRESS_LO] = self.poll_address_lo;
        out[1 + field::POLL_ADDRESS_HI] = self.poll_address_hi;
        out[1 + field::REFERENCE] = self.reference;
        out[1 + field::MASK] = self.mask;
        out[1 + field::POLL_INTERVAL] = self.poll_interval.raw();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::test_util::{Item, Recorder};

    fn parse_words(words: &[u32]) -> Result<WaitRegMem, PacketError> {
        WaitRegMem::parse(Type3Header::decode(words[0]).unwrap(), &words[1..])
    }

    // Header COUNT 5 = 0xC0053C00. A fence wait: FUNCTION == (3), MEM_SPACE memory (1 << 4),
    // poll interval 4 (Linux fence waits).
    const MEMORY_WAIT: [u32; 7] = [0xC005_3C00, 0x0000_0013, 0x1234_5678, 0x0000_7F00, 0x0000_0001, 0xFFFF_FFFF, 4];

    #[test]
    fn memory_wait_literal() {
        let p = WaitRegMem::memory(Function::Equal, 0x7F00_1234_5678, 1, 0xFFFF_FFFF, 4).unwrap();
        let mut out = [0; 7];
        p.emit(&mut out);
        assert_eq!(out, MEMORY_WAIT);
        let parsed = parse_words(&MEMORY_WAIT).unwrap();
        assert_eq!(parsed, p);
        assert_eq!(parsed.control.function(), Function::Equal);
        assert_eq!(parsed.control.mem_space(), MemSpace::Memory);
        assert_eq!(parsed.control.operation(), Operation::WaitRegMem);
        assert_eq!(parsed.poll_address(), 0x7F00_1234_5678);
        assert_eq!(parsed.poll_interval.poll_interval(), 4);
    }

    // A register wait: FUNCTION >= (5), MEM_SPACE register, poll interval 0x20 (Linux reg waits).
    #[test]
    fn register_wait_literal() {
        const WORDS: [u32; 7] = [0xC005_3C00, 0x0000_0005, 0x0000_2E40, 0, 0x10, 0xFF, 0x20];
        let p = WaitRegMem::register(Function::GreaterEqual, 0x2E40, 0x10, 0xFF, 0x20).unwrap();
        let mut out = [0; 7];
        p.emit(&mut out);
        assert_eq!(out, WORDS);
        assert_eq!(parse_words(&WORDS), Ok(p));
        let mut rec = Recorder::default();
        p.visit(&mut rec);
        assert_eq!(rec.items[1], Item::Enum("FUNCTION", 5, Some(">=")));
        assert_eq!(rec.items[2], Item::Enum("MEM_SPACE", 0, Some("REGISTER")));
        assert_eq!(rec.items[4], Item::Field("POLL_REG", 0x2E40));
    }

    #[test]
    fn malformed() {
        let mut words = MEMORY_WAIT;
        words[2] = 0x1234_5679;
        assert_eq!(
            parse_words(&words),
            Err(PacketError::FieldValue { opcode: Opcode::WaitRegMem, field: "POLL_ADDRESS_LO", value: 1 })
        );
        // A register poll has no alignment rule.
        words[1] = 0x0000_0003;
        assert!(parse_words(&words).is_ok());
        assert_eq!(
            parse_words(&MEMORY_WAIT[..6]),
            Err(PacketError::BodyLength { opcode: Opcode::WaitRegMem, expected: 6, found: 5 })
        );
        assert!(WaitRegMem::memory(Function::Equal, 0x1002, 0, 0, 4).is_err());
        assert!(WaitRegMem::register(Function::Equal, 0x4_0000, 0, 0, 4).is_err());
        assert!(matches!(
            WaitRegMem::register(Function::Unknown(8), 0x2E40, 0, 0, 4),
            Err(PacketError::FieldValue { field: "FUNCTION", value: 8, .. })
        ));
        assert_eq!(WaitRegMemControl::from_raw(7).function(), Function::Unknown(7));
        assert_eq!(WaitRegMemControl::from_raw(0x80).operation(), Operation::Unknown(2));
    }
}
