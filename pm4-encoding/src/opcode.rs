//! Type-3 opcodes (`IT_OPCODE`, header bits `[15:8]`).
//!
//! Values and availability: `reference/amd-reference.md` §4 "Opcodes" (Linux `nvd.h`, Mesa `sid.h`).
//! Every byte maps to a variant: codes this crate does not name become [`Opcode::Unknown`], so a
//! decoder never fails just because it meets a newer packet.

macro_rules! opcodes {
    ($( $(#[$meta:meta])* $variant:ident = $value:literal, $name:literal; )*) => {
        /// A PM4 type-3 opcode.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Opcode {
            $( $(#[$meta])* $variant, )*
            /// An opcode this crate does not name; the raw byte.
            Unknown(u8),
        }

        impl Opcode {
            /// Every named opcode, in table order.
            pub const ALL: &'static [Opcode] = &[ $( Opcode::$variant, )* ];

            /// The opcode for a raw `IT_OPCODE` byte.
            #[must_use]
            pub const fn from_u8(raw: u8) -> Self {
                match raw {
                    $( $value => Opcode::$variant, )*
                    other => Opcode::Unknown(other),
                }
            }

            /// The raw `IT_OPCODE` byte.
            #[must_use]
            pub const fn to_u8(self) -> u8 {
                match self {
                    $( Opcode::$variant => $value, )*
                    Opcode::Unknown(raw) => raw,
                }
            }

            /// The hardware name (`SET_SH_REG`), or `None` for [`Opcode::Unknown`].
            #[must_use]
            pub const fn name(self) -> Option<&'static str> {
                match self {
                    $( Opcode::$variant => Some($name), )*
                    Opcode::Unknown(_) => None,
                }
            }
        }
    };
}

opcodes! {
    /// `PACKET3_NOP`: body ignored; count 0x3FFF is a header-only filler.
    Nop = 0x10, "NOP";
    /// `SET_BASE`: base address for indirect dispatch.
    SetBase = 0x11, "SET_BASE";
    /// `CLEAR_STATE`.
    ClearState = 0x12, "CLEAR_STATE";
    /// `DISPATCH_DIRECT`: launch a compute grid.
    DispatchDirect = 0x15, "DISPATCH_DIRECT";
    /// `DISPATCH_INDIRECT`: launch with dimensions read from memory.
    DispatchIndirect = 0x16, "DISPATCH_INDIRECT";
    /// `ATOMIC_MEM`.
    AtomicMem = 0x1E, "ATOMIC_MEM";
    /// `SET_PREDICATION`.
    SetPredication = 0x20, "SET_PREDICATION";
    /// `COND_EXEC`.
    CondExec = 0x22, "COND_EXEC";
    /// `PRED_EXEC`.
    PredExec = 0x23, "PRED_EXEC";
    /// `CONTEXT_CONTROL`.
    ContextControl = 0x28, "CONTEXT_CONTROL";
    /// `WRITE_DATA`: write immediate dwords to memory or registers.
    WriteData = 0x37, "WRITE_DATA";
    /// `WAIT_REG_MEM`: poll a register or memory dword.
    WaitRegMem = 0x3C, "WAIT_REG_MEM";
    /// `INDIRECT_BUFFER`: execute (or chain to) another command buffer.
    IndirectBuffer = 0x3F, "INDIRECT_BUFFER";
    /// `COPY_DATA`: copy registers, memory, immediates or counters.
    CopyData = 0x40, "COPY_DATA";
    /// `PFP_SYNC_ME`.
    PfpSyncMe = 0x42, "PFP_SYNC_ME";
    /// `SURFACE_SYNC` (deprecated since GFX7).
    SurfaceSync = 0x43, "SURFACE_SYNC";
    /// `EVENT_WRITE`: pipeline events such as `CS_PARTIAL_FLUSH`.
    EventWrite = 0x46, "EVENT_WRITE";
    /// `EVENT_WRITE_EOP` (GFX6-8).
    EventWriteEop = 0x47, "EVENT_WRITE_EOP";
    /// `EVENT_WRITE_EOS` (GFX6-8).
    EventWriteEos = 0x48, "EVENT_WRITE_EOS";
    /// `RELEASE_MEM`: end-of-pipe event with cache actions and a data write.
    ReleaseMem = 0x49, "RELEASE_MEM";
    /// `DMA_DATA`.
    DmaData = 0x50, "DMA_DATA";
    /// `ACQUIRE_MEM`: cache invalidate / write-back (`GCR_CNTL`).
    AcquireMem = 0x58, "ACQUIRE_MEM";
    /// `LOAD_SH_REG`.
    LoadShReg = 0x5F, "LOAD_SH_REG";
    /// `SET_CONFIG_REG`.
    SetConfigReg = 0x68, "SET_CONFIG_REG";
    /// `SET_CONTEXT_REG`.
    SetContextReg = 0x69, "SET_CONTEXT_REG";
    /// `SET_SH_REG`: write consecutive persistent-state (SH) registers.
    SetShReg = 0x76, "SET_SH_REG";
    /// `SET_SH_REG_OFFSET`.
    SetShRegOffset = 0x77, "SET_SH_REG_OFFSET";
    /// `SET_UCONFIG_REG`: write consecutive user-config registers.
    SetUconfigReg = 0x79, "SET_UCONFIG_REG";
    /// `SET_UCONFIG_REG_INDEX`.
    SetUconfigRegIndex = 0x7A, "SET_UCONFIG_REG_INDEX";
    /// `WAIT_REG_MEM64`.
    WaitRegMem64 = 0x93, "WAIT_REG_MEM64";
    /// `HDP_FLUSH`.
    HdpFlush = 0x95, "HDP_FLUSH";
    /// `INVALIDATE_TLBS`.
    InvalidateTlbs = 0x98, "INVALIDATE_TLBS";
    /// `AQL_PACKET`.
    AqlPacket = 0x99, "AQL_PACKET";
    /// `DMA_DATA_FILL_MULTI`.
    DmaDataFillMulti = 0x9A, "DMA_DATA_FILL_MULTI";
    /// `SET_SH_REG_INDEX`.
    SetShRegIndex = 0x9B, "SET_SH_REG_INDEX";
    /// `DISPATCH_DIRECT_INTERLEAVED` (GFX12).
    DispatchDirectInterleaved = 0xA7, "DISPATCH_DIRECT_INTERLEAVED";
    /// `DISPATCH_INDIRECT_INTERLEAVED` (GFX12).
    DispatchIndirectInterleaved = 0xA8, "DISPATCH_INDIRECT_INTERLEAVED";
    /// `SET_CONTEXT_REG_PAIRS` (GFX11+).
    SetContextRegPairs = 0xB8, "SET_CONTEXT_REG_PAIRS";
    /// `SET_CONTEXT_REG_PAIRS_PACKED` (GFX11).
    SetContextRegPairsPacked = 0xB9, "SET_CONTEXT_REG_PAIRS_PACKED";
    /// `SET_SH_REG_PAIRS` (GFX11+).
    SetShRegPairs = 0xBA, "SET_SH_REG_PAIRS";
    /// `SET_SH_REG_PAIRS_PACKED` (GFX11).
    SetShRegPairsPacked = 0xBB, "SET_SH_REG_PAIRS_PACKED";
    /// `SET_SH_REG_PAIRS_PACKED_N` (GFX11).
    SetShRegPairsPackedN = 0xBD, "SET_SH_REG_PAIRS_PACKED_N";
    /// `SET_UCONFIG_REG_PAIRS` (GFX12+).
    SetUconfigRegPairs = 0xBE, "SET_UCONFIG_REG_PAIRS";
}

impl From<u8> for Opcode {
    fn from(raw: u8) -> Self {
        Opcode::from_u8(raw)
    }
}

impl From<Opcode> for u8 {
    fn from(op: Opcode) -> u8 {
        op.to_u8()
    }
}

impl core::fmt::Display for Opcode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "UNKNOWN_{:#04X}", self.to_u8()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips() {
        for raw in 0..=u8::MAX {
            assert_eq!(Opcode::from_u8(raw).to_u8(), raw);
        }
    }

    #[test]
    fn named_codes_are_not_unknown() {
        for op in Opcode::ALL {
            assert!(op.name().is_some());
            assert!(!matches!(Opcode::from_u8(op.to_u8()), Opcode::Unknown(_)));
        }
        assert_eq!(Opcode::from_u8(0x76), Opcode::SetShReg);
        assert_eq!(Opcode::from_u8(0x01), Opcode::Unknown(0x01));
    }
}
