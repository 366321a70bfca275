//! The 16-bit AQL packet header, the kernel-dispatch `setup` field and the small enums packets
//! carry (packet types, fence scopes, AMD vendor formats, signal conditions).
//!
//! Layout: `reference/amd-reference.md` §5. Header: `[7:0]` `TYPE`, `[8]` `BARRIER`,
//! `[10:9]` `SCACQUIRE_FENCE_SCOPE`, `[12:11]` `SCRELEASE_FENCE_SCOPE`, `[15:13]` reserved.
//! Setup: `[1:0]` `DIMENSIONS`, `[15:2]` reserved. The header and the field after it (`setup`,
//! `type`, `reserved0` or the AMD format) form the first 32-bit word of a packet, the word that is
//! published last (see [`crate::ring`]).
//!
//! The header has a single independent bit, `BARRIER` (a `bool` in [`PacketControl`]); the fence
//! scopes and `DIMENSIONS` are multi-bit enumerated fields, so there is no flag set to make a
//! `bitflags` type of.

/// One named bit field of a 16-bit word, `[hi:lo]` inclusive, bit 0 = least significant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BitField {
    /// The name the reference table uses (`SCACQUIRE_FENCE_SCOPE`).
    pub name: &'static str,
    /// Highest bit, inclusive.
    pub hi: u8,
    /// Lowest bit.
    pub lo: u8,
}

impl BitField {
    /// The field's bits in place.
    #[must_use]
    pub const fn mask(self) -> u16 {
        let width = self.hi - self.lo + 1;
        // CAST: width <= 16, so the shifted value fits u32 and the mask fits u16 after the shift.
        #[allow(clippy::cast_possible_truncation)]
        let ones = ((1u32 << width) - 1) as u16;
        ones << self.lo
    }

    /// The field's value in `word`.
    #[must_use]
    pub const fn get(self, word: u16) -> u16 {
        (word & self.mask()) >> self.lo
    }

    /// `value` moved into place, with bits that do not fit dropped.
    #[must_use]
    pub const fn place(self, value: u16) -> u16 {
        (value << self.lo) & self.mask()
    }
}

mod field {
    use super::BitField;

    pub(super) const TYPE: BitField = BitField { name: "TYPE", hi: 7, lo: 0 };
    pub(super) const BARRIER: BitField = BitField { name: "BARRIER", hi: 8, lo: 8 };
    pub(super) const SCACQUIRE_FENCE_SCOPE: BitField = BitField { name: "SCACQUIRE_FENCE_SCOPE", hi: 10, lo: 9 };
    pub(super) const SCRELEASE_FENCE_SCOPE: BitField = BitField { name: "SCRELEASE_FENCE_SCOPE", hi: 12, lo: 11 };
    pub(super) const HEADER_RESERVED: BitField = BitField { name: "reserved", hi: 15, lo: 13 };

    pub(super) const DIMENSIONS: BitField = BitField { name: "DIMENSIONS", hi: 1, lo: 0 };
    pub(super) const SETUP_RESERVED: BitField = BitField { name: "reserved", hi: 15, lo: 2 };
}

/// `hsa_packet_type_t`: header bits `[7:0]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PacketType {
    /// 0: vendor specific; AMD puts its format in byte 2 ([`AmdFormat`]).
    VendorSpecific = 0,
    /// 1: the slot holds no packet; the packet processor waits on it.
    Invalid = 1,
    /// 2: kernel dispatch.
    KernelDispatch = 2,
    /// 3: barrier that waits for all of its dependency signals.
    BarrierAnd = 3,
    /// 4: agent dispatch.
    AgentDispatch = 4,
    /// 5: barrier that waits for any of its dependency signals.
    BarrierOr = 5,
}

impl PacketType {
    /// Every packet type, in value order.
    pub const ALL: [PacketType; 6] = [
        PacketType::VendorSpecific,
        PacketType::Invalid,
        PacketType::KernelDispatch,
        PacketType::BarrierAnd,
        PacketType::AgentDispatch,
        PacketType::BarrierOr,
    ];

    /// The type for a raw `TYPE` byte, or `None` for a value HSA does not define.
    #[must_use]
    pub const fn from_u8(raw: u8) -> Option<Self> {
        Some(match raw {
            0 => PacketType::VendorSpecific,
            1 => PacketType::Invalid,
            2 => PacketType::KernelDispatch,
            3 => PacketType::BarrierAnd,
            4 => PacketType::AgentDispatch,
            5 => PacketType::BarrierOr,
            _ => return None,
        })
    }

    /// The raw `TYPE` byte.
    #[must_use]
    pub const fn to_u8(self) -> u8 {
        self as u8
    }

    /// The HSA name (`HSA_PACKET_TYPE_KERNEL_DISPATCH`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            PacketType::VendorSpecific => "HSA_PACKET_TYPE_VENDOR_SPECIFIC",
            PacketType::Invalid => "HSA_PACKET_TYPE_INVALID",
            PacketType::KernelDispatch => "HSA_PACKET_TYPE_KERNEL_DISPATCH",
            PacketType::BarrierAnd => "HSA_PACKET_TYPE_BARRIER_AND",
            PacketType::AgentDispatch => "HSA_PACKET_TYPE_AGENT_DISPATCH",
            PacketType::BarrierOr => "HSA_PACKET_TYPE_BARRIER_OR",
        }
    }
}

/// `hsa_fence_scope_t`: the acquire and release scopes of a packet. The 2-bit value 3 is not a
/// scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum FenceScope {
    /// 0: no fence.
    #[default]
    None = 0,
    /// 1: the agent (GPU) scope.
    Agent = 1,
    /// 2: the system scope (host and all agents).
    System = 2,
}

impl FenceScope {
    /// Every scope, in value order.
    pub const ALL: [FenceScope; 3] = [FenceScope::None, FenceScope::Agent, FenceScope::System];

    /// The scope for a raw 2-bit value, or `None` for 3.
    #[must_use]
    pub const fn from_u8(raw: u8) -> Option<Self> {
        Some(match raw {
            0 => FenceScope::None,
            1 => FenceScope::Agent,
            2 => FenceScope::System,
            _ => return None,
        })
    }

    /// The raw value.
    #[must_use]
    pub const fn to_u8(self) -> u8 {
        self as u8
    }

    /// The HSA name (`HSA_FENCE_SCOPE_SYSTEM`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            FenceScope::None => "HSA_FENCE_SCOPE_NONE",
            FenceScope::Agent => "HSA_FENCE_SCOPE_AGENT",
            FenceScope::System => "HSA_FENCE_SCOPE_SYSTEM",
        }
    }
}

/// The header bits every packet type shares: barrier and fence scopes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct PacketControl {
    /// `BARRIER`: the packet processor waits for all earlier packets to complete first.
    pub barrier: bool,
    /// `SCACQUIRE_FENCE_SCOPE`.
    pub acquire: FenceScope,
    /// `SCRELEASE_FENCE_SCOPE`.
    pub release: FenceScope,
}

impl PacketControl {
    /// No barrier, no fences.
    pub const NONE: Self = Self { barrier: false, acquire: FenceScope::None, release: FenceScope::None };

    /// Barrier set, system-scope acquire and release: the conservative choice for a packet
    /// that reads what the host wrote and writes what the host will read.
    pub const SYSTEM_BARRIER: Self = Self { barrier: true, acquire: FenceScope::System, release: FenceScope::System };
}

/// A decoded AQL packet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// `TYPE`.
    pub packet_type: PacketType,
    /// `BARRIER` and the fence scopes.
    pub control: PacketControl,
}

/// Why a 16-bit word is not a valid AQL header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// `TYPE` is not one of the six HSA packet types.
    #[error("unknown AQL packet type {packet_type}")]
    UnknownPacketType {
        /// The raw `TYPE` byte.
        packet_type: u8,
    },
    /// A fence scope field holds 3, which is not a scope.
    #[error("{field} holds {value}, which is not a fence scope")]
    InvalidFenceScope {
        /// `SCACQUIRE_FENCE_SCOPE` or `SCRELEASE_FENCE_SCOPE`.
        field: &'static str,
        /// The raw 2-bit value.
        value: u8,
    },
    /// Bits `[15:13]` must be zero.
    #[error("reserved AQL header bits [15:13] are set ({bits:#06x})")]
    ReservedBits {
        /// The offending bits, in place.
        bits: u16,
    },
}

impl Header {
    /// Every field of the header word, in bit order, as the reference table names them.
    pub const FIELDS: [BitField; 5] = [
        field::TYPE,
        field::BARRIER,
        field::SCACQUIRE_FENCE_SCOPE,
        field::SCRELEASE_FENCE_SCOPE,
        field::HEADER_RESERVED,
    ];

    /// A header of `packet_type` with `control`.
    #[must_use]
    pub const fn new(packet_type: PacketType, control: PacketControl) -> Self {
        Self { packet_type, control }
    }

    /// Encodes the 16-bit header.
    #[must_use]
    pub const fn encode(self) -> u16 {
        field::TYPE.place(self.packet_type.to_u8() as u16)
            | field::BARRIER.place(self.control.barrier as u16)
            | field::SCACQUIRE_FENCE_SCOPE.place(self.control.acquire.to_u8() as u16)
            | field::SCRELEASE_FENCE_SCOPE.place(self.control.release.to_u8() as u16)
    }

    /// Decodes a 16-bit header.
    ///
    /// # Errors
    /// [`HeaderError`] for reserved bits, an unknown type or a fence scope of 3, checked in that
    /// order.
    pub const fn decode(raw: u16) -> Result<Self, HeaderError> {
        if field::HEADER_RESERVED.get(raw) != 0 {
            return Err(HeaderError::ReservedBits { bits: raw & field::HEADER_RESERVED.mask() });
        }
        let Some(packet_type) = PacketType::from_u8(low_byte(field::TYPE.get(raw))) else {
            return Err(HeaderError::UnknownPacketType { packet_type: low_byte(field::TYPE.get(raw)) });
        };
        let acquire = match fence_scope(field::SCACQUIRE_FENCE_SCOPE, raw) {
            Ok(scope) => scope,
            Err(e) => return Err(e),
        };
        let release = match fence_scope(field::SCRELEASE_FENCE_SCOPE, raw) {
            Ok(scope) => scope,
            Err(e) => return Err(e),
        };
        Ok(Self { packet_type, control: PacketControl { barrier: field::BARRIER.get(raw) != 0, acquire, release } })
    }
}

/// The raw `TYPE` byte of a header, without validating anything else.
#[must_use]
pub const fn raw_packet_type(raw_header: u16) -> u8 {
    low_byte(field::TYPE.get(raw_header))
}

const fn fence_scope(f: BitField, raw: u16) -> Result<FenceScope, HeaderError> {
    let value = low_byte(f.get(raw));
    match FenceScope::from_u8(value) {
        Some(scope) => Ok(scope),
        None => Err(HeaderError::InvalidFenceScope { field: f.name, value }),
    }
}

/// The low byte of a value already masked to at most 8 bits.
const fn low_byte(v: u16) -> u8 {
    // CAST: callers pass fields of at most 8 bits.
    #[allow(clippy::cast_possible_truncation)]
    let b = v as u8;
    b
}

/// The first 32-bit word of a packet as it sits in memory (little endian): the header in bits
/// `[15:0]`, the field at byte offset 2 (`setup`, `type`, `reserved0`, AMD format) in `[31:16]`.
#[must_use]
pub const fn header_word(header: u16, setup: u16) -> u32 {
    (header as u32) | ((setup as u32) << 16)
}

/// `DIMENSIONS`, kernel-dispatch `setup` bits `[1:0]`: how many grid dimensions are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Dimensions {
    /// A 1D grid.
    One = 1,
    /// A 2D grid.
    Two = 2,
    /// A 3D grid.
    Three = 3,
}

/// Why a kernel-dispatch `setup` field is invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// `DIMENSIONS` is 0; only 1, 2 and 3 are grids.
    #[error("kernel dispatch DIMENSIONS is {dimensions}, expected 1..=3")]
    InvalidDimensions {
        /// The raw 2-bit value.
        dimensions: u8,
    },
    /// Bits `[15:2]` must be zero.
    #[error("reserved kernel dispatch setup bits [15:2] are set ({bits:#06x})")]
    ReservedBits {
        /// The offending bits, in place.
        bits: u16,
    },
}

impl Dimensions {
    /// Every field of the `setup` word, in bit order.
    pub const FIELDS: [BitField; 2] = [field::DIMENSIONS, field::SETUP_RESERVED];

    /// The fewest dimensions that hold a launch: the highest axis with more than one work-item
    /// in the grid or the work-group (unused axes are 1), as HIP chooses it.
    #[must_use]
    pub const fn fewest(grid: [u32; 3], workgroup: [u16; 3]) -> Self {
        if grid[2] > 1 || workgroup[2] > 1 {
            Dimensions::Three
        } else if grid[1] > 1 || workgroup[1] > 1 {
            Dimensions::Two
        } else {
            Dimensions::One
        }
    }

    /// The number of dimensions, 1..=3.
    #[must_use]
    pub const fn count(self) -> u8 {
        self as u8
    }

    /// The `setup` field for this many dimensions.
    #[must_use]
    pub const fn to_setup(self) -> u16 {
        field::DIMENSIONS.place(self as u16)
    }

    /// Decodes a `setup` field.
    ///
    /// # Errors
    /// [`SetupError`] for reserved bits or a `DIMENSIONS` of 0.
    pub const fn from_setup(setup: u16) -> Result<Self, SetupError> {
        if field::SETUP_RESERVED.get(setup) != 0 {
            return Err(SetupError::ReservedBits { bits: setup & field::SETUP_RESERVED.mask() });
        }
        match field::DIMENSIONS.get(setup) {
            1 => Ok(Dimensions::One),
            2 => Ok(Dimensions::Two),
            3 => Ok(Dimensions::Three),
            other => Err(SetupError::InvalidDimensions { dimensions: low_byte(other) }),
        }
    }
}

/// The AMD vendor-packet format (`AmdFormat`, byte 2 of a vendor-specific packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AmdFormat {
    /// 1: `AMD_AQL_FORMAT_PM4_IB`, a ROCr-internal packet that jumps to a PM4 indirect buffer.
    Pm4Ib,
    /// 2: `HSA_AMD_PACKET_TYPE_BARRIER_VALUE`.
    BarrierValue,
    /// 3: `HSA_AMD_PACKET_TYPE_AIE_ERT` (newer ROCr); named, not supported by this crate.
    AieErt,
    /// Any other value.
    Unknown(u8),
}

impl AmdFormat {
    /// The format for a raw byte.
    #[must_use]
    pub const fn from_u8(raw: u8) -> Self {
        match raw {
            1 => AmdFormat::Pm4Ib,
            2 => AmdFormat::BarrierValue,
            3 => AmdFormat::AieErt,
            other => AmdFormat::Unknown(other),
        }
    }

    /// The raw byte.
    #[must_use]
    pub const fn to_u8(self) -> u8 {
        match self {
            AmdFormat::Pm4Ib => 1,
            AmdFormat::BarrierValue => 2,
            AmdFormat::AieErt => 3,
            AmdFormat::Unknown(raw) => raw,
        }
    }
}

/// `hsa_signal_condition_t`: how a barrier-value packet compares `(signal & mask)` with `value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SignalCondition {
    /// 0: equal.
    Eq = 0,
    /// 1: not equal.
    Ne = 1,
    /// 2: less than.
    Lt = 2,
    /// 3: greater than or equal.
    Gte = 3,
}

impl SignalCondition {
    /// Every condition, in value order.
    pub const ALL: [SignalCondition; 4] =
        [SignalCondition::Eq, SignalCondition::Ne, SignalCondition::Lt, SignalCondition::Gte];

    /// The condition for a raw 32-bit `cond` field, or `None` for other values.
    #[must_use]
    pub const fn from_u32(raw: u32) -> Option<Self> {
        Some(match raw {
            0 => SignalCondition::Eq,
            1 => SignalCondition::Ne,
            2 => SignalCondition::Lt,
            3 => SignalCondition::Gte,
            _ => return None,
        })
    }

    /// The raw value.
    #[must_use]
    pub const fn to_u32(self) -> u32 {
        self as u32
    }

    /// The HSA name (`HSA_SIGNAL_CONDITION_GTE`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            SignalCondition::Eq => "HSA_SIGNAL_CONDITION_EQ",
            SignalCondition::Ne => "HSA_SIGNAL_CONDITION_NE",
            SignalCondition::Lt => "HSA_SIGNAL_CONDITION_LT",
            SignalCondition::Gte => "HSA_SIGNAL_CONDITION_GTE",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected words computed by hand from the §5 header bit positions.
    #[test]
    fn encodes_literal_headers() {
        let dispatch = Header::new(PacketType::KernelDispatch, PacketControl::SYSTEM_BARRIER);
        // 2 | 1<<8 | 2<<9 | 2<<11
        assert_eq!(dispatch.encode(), 0x1502);
        let invalid = Header::new(PacketType::Invalid, PacketControl::default());
        assert_eq!(invalid.encode(), 0x0001);
        let or = Header::new(
            PacketType::BarrierOr,
            PacketControl { barrier: false, acquire: FenceScope::Agent, release: FenceScope::None },
        );
        // 5 | 1<<9
        assert_eq!(or.encode(), 0x0205);
    }

    #[test]
    fn decodes_literal_headers() {
        let h = Header::decode(0x1502).unwrap();
        assert_eq!(h.packet_type, PacketType::KernelDispatch);
        assert_eq!(h.control, PacketControl::SYSTEM_BARRIER);
        let h = Header::decode(0x0804).unwrap();
        assert_eq!(h.packet_type, PacketType::AgentDispatch);
        assert_eq!(h.control, PacketControl { barrier: false, acquire: FenceScope::None, release: FenceScope::Agent });
    }

    #[test]
    fn rejects_bad_headers() {
        assert_eq!(Header::decode(0x0006), Err(HeaderError::UnknownPacketType { packet_type: 6 }));
        assert_eq!(Header::decode(0x00FF), Err(HeaderError::UnknownPacketType { packet_type: 0xFF }));
        assert_eq!(
            Header::decode(0x0602),
            Err(HeaderError::InvalidFenceScope { field: "SCACQUIRE_FENCE_SCOPE", value: 3 })
        );
        assert_eq!(
            Header::decode(0x1802),
            Err(HeaderError::InvalidFenceScope { field: "SCRELEASE_FENCE_SCOPE", value: 3 })
        );
        assert_eq!(Header::decode(0x2002), Err(HeaderError::ReservedBits { bits: 0x2000 }));
        assert_eq!(Header::decode(0x8002), Err(HeaderError::ReservedBits { bits: 0x8000 }));
    }

    #[test]
    fn setup_dimensions() {
        assert_eq!(Dimensions::Three.to_setup(), 0x0003);
        assert_eq!(Dimensions::fewest([1, 1, 1], [1, 1, 1]), Dimensions::One);
        assert_eq!(Dimensions::fewest([64, 1, 1], [64, 1, 1]), Dimensions::One);
        assert_eq!(Dimensions::fewest([64, 2, 1], [64, 1, 1]), Dimensions::Two);
        assert_eq!(Dimensions::fewest([64, 1, 1], [8, 2, 1]), Dimensions::Two);
        assert_eq!(Dimensions::fewest([4, 1, 3], [4, 1, 1]), Dimensions::Three);
        assert_eq!(Dimensions::fewest([4, 1, 1], [2, 1, 2]), Dimensions::Three);
        assert_eq!(Dimensions::from_setup(0x0002), Ok(Dimensions::Two));
        assert_eq!(Dimensions::from_setup(0x0000), Err(SetupError::InvalidDimensions { dimensions: 0 }));
        assert_eq!(Dimensions::from_setup(0x0005), Err(SetupError::ReservedBits { bits: 0x0004 }));
        assert_eq!(Dimensions::from_setup(0x8001), Err(SetupError::ReservedBits { bits: 0x8000 }));
    }

    #[test]
    fn header_word_layout() {
        assert_eq!(header_word(0x1502, 0x0003), 0x0003_1502);
        assert_eq!(raw_packet_type(0xE0FF), 0xFF);
    }

    #[test]
    fn bitfield_masks() {
        assert_eq!(Header::FIELDS.iter().fold(0, |m, f| m | f.mask()), 0xFFFF);
        assert_eq!(field::SCRELEASE_FENCE_SCOPE.mask(), 0x1800);
        assert_eq!(field::SETUP_RESERVED.mask(), 0xFFFC);
        assert_eq!(AmdFormat::from_u8(9), AmdFormat::Unknown(9));
        assert_eq!(AmdFormat::from_u8(1).to_u8(), 1);
    }
}
