//! `SET_SH_REG` (0x76): write consecutive persistent-state (SH) registers.
//!
//! Layout: [`super::reg_write`], with `REG_OFFSET` relative to [`crate::regs::SH_REG_BASE`] and the
//! window [`crate::regs::SH_REG_BASE`]..[`crate::regs::SH_REG_END`] (reference §1, §4 "SET_SH_REG").

use crate::opcode::Opcode;
use crate::packet::reg_write::{RegWindow, RegWrite};
use crate::regs::{SH_REG_BASE, SH_REG_END};

/// The SH (persistent state) register window, dwords 0x2C00..0x3000.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShWindow {}

impl RegWindow for ShWindow {
    const OPCODE: Opcode = Opcode::SetShReg;
    const BASE: u32 = SH_REG_BASE;
    const END: u32 = SH_REG_END;
}

/// A validated `SET_SH_REG` packet.
pub type SetShReg<'a> = RegWrite<'a, ShWindow>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{HeaderFlags, Type3Header};
    use crate::packet::test_util::{Item, Recorder};
    use crate::packet::{Emit, PacketError};
    use crate::{Family, ShaderType};

    fn parse_words(words: &[u32]) -> Result<SetShReg<'_>, PacketError> {
        SetShReg::parse(Type3Header::decode(words[0]).unwrap(), &words[1..])
    }

    // Reference §4: SET_SH_REG with one value = 0xC0017600; COMPUTE_PGM_LO is dword 0x2E0C,
    // SET_SH_REG offset 0x20C (§2).
    #[test]
    fn one_value_literal() {
        const WORDS: [u32; 3] = [0xC001_7600, 0x0000_020C, 0x0012_3456];
        let p = SetShReg::new(0x2E0C, &WORDS[2..]).unwrap();
        let mut out = [0; 3];
        p.emit(&mut out);
        assert_eq!(out, WORDS);
        let parsed = parse_words(&WORDS).unwrap();
        assert_eq!(parsed, p);
        assert_eq!(parsed.first_dword(), 0x2E0C);
        assert_eq!(parsed.control.reg_offset(), 0x20C);
        assert_eq!(parsed.values, &[0x0012_3456]);
    }

    // COMPUTE_USER_DATA_0..1 (0x2E40, offset 0x240), INDEX 3 (Mesa's CU-mask mode) and
    // SHADER_TYPE kept.
    #[test]
    fn several_values_and_index() {
        const WORDS: [u32; 4] = [0xC002_7602, 0x3000_0240, 0xAAAA_0000, 0x0000_BBBB];
        let p = parse_words(&WORDS).unwrap();
        assert_eq!(p.flags.shader_type, ShaderType::Compute);
        assert_eq!(p.control.index(), 3);
        assert_eq!(p.first_dword(), 0x2E40);
        let mut q = SetShReg::new(0x2E40, &WORDS[2..]).unwrap();
        q.flags = HeaderFlags::COMPUTE;
        q.control = q.control.with_index(3);
        assert_eq!(p, q);
        let mut out = [0; 4];
        q.emit(&mut out);
        assert_eq!(out, WORDS);

        let mut rec = Recorder::default();
        p.visit(Family::Gfx11, &mut rec);
        assert_eq!(rec.items[0], Item::Word("CONTROL", 0x3000_0240));
        assert_eq!(rec.items[1..], [Item::Register(0x2E40, 0xAAAA_0000), Item::Register(0x2E41, 0x0000_BBBB)]);
    }

    #[test]
    fn window_and_length_errors() {
        // Offset 0x3FF with two values ends at 0x3001, past SH_REG_END 0x3000.
        assert_eq!(
            parse_words(&[0xC002_7600, 0x0000_03FF, 1, 2]),
            Err(PacketError::RegisterOutsideWindow {
                opcode: Opcode::SetShReg,
                first: 0x2FFF,
                end: 0x3001,
                window_start: 0x2C00,
                window_end: 0x3000,
            })
        );
        // The last SH dword itself is fine.
        assert!(parse_words(&[0xC001_7600, 0x0000_03FF, 1]).is_ok());
        assert!(matches!(
            parse_words(&[0xC001_7600, 0x0000_FFFF, 1]),
            Err(PacketError::RegisterOutsideWindow { first: 0x12BFF, .. })
        ));
        assert_eq!(
            parse_words(&[0xC000_7600, 0x0000_0240]),
            Err(PacketError::BodyLength { opcode: Opcode::SetShReg, expected: 2, found: 1 })
        );
        assert!(matches!(SetShReg::new(0x2BFF, &[0]), Err(PacketError::RegisterOutsideWindow { first: 0x2BFF, .. })));
        assert!(matches!(SetShReg::new(0x2E40, &[]), Err(PacketError::BodyLength { expected: 2, found: 1, .. })));
    }
}
