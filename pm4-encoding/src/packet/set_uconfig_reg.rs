//! `SET_UCONFIG_REG` (0x79): write consecutive user-config registers.
//!
//! Layout: [`super::reg_write`], with `REG_OFFSET` relative to [`crate::regs::UCONFIG_REG_BASE`]
//! and the window [`crate::regs::UCONFIG_REG_BASE`]..[`crate::regs::UCONFIG_REG_END`]
//! (reference §1, §4 "SET_UCONFIG_REG").

use crate::opcode::Opcode;
use crate::packet::reg_write::{RegWindow, RegWrite};
use crate::regs::{UCONFIG_REG_BASE, UCONFIG_REG_END};

/// The UCONFIG register window, dwords 0xC000..[`UCONFIG_REG_END`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UconfigWindow {}

impl RegWindow for UconfigWindow {
    const OPCODE: Opcode = Opcode::SetUconfigReg;
    const BASE: u32 = UCONFIG_REG_BASE;
    const END: u32 = UCONFIG_REG_END;
}

/// A validated `SET_UCONFIG_REG` packet.
pub type SetUconfigReg<'a> = RegWrite<'a, UconfigWindow>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{MAX_BODY_DWORDS, Type3Header};
    use crate::packet::{Emit, PacketError};
    use std::vec;

    fn parse_words(words: &[u32]) -> Result<SetUconfigReg<'_>, PacketError> {
        SetUconfigReg::parse(Type3Header::decode(words[0]).unwrap(), &words[1..])
    }

    // Reference §4: REG_OFFSET = absolute dword - 0xC000; header opcode 0x79, COUNT 1.
    #[test]
    fn literal_words() {
        const WORDS: [u32; 3] = [0xC001_7900, 0x0000_0040, 0x0000_0001];
        let p = SetUconfigReg::new(0xC040, &WORDS[2..]).unwrap();
        let mut out = [0; 3];
        p.emit(&mut out);
        assert_eq!(out, WORDS);
        let parsed = parse_words(&WORDS).unwrap();
        assert_eq!(parsed.first_dword(), 0xC040);
        assert_eq!(parsed, p);
    }

    #[test]
    fn window_and_length_errors() {
        assert!(matches!(SetUconfigReg::new(0xBFFF, &[0]), Err(PacketError::RegisterOutsideWindow { .. })));
        // The SH window's dwords are not UCONFIG dwords.
        assert!(SetUconfigReg::new(0x2E40, &[0]).is_err());
        let last = UCONFIG_REG_END - 1;
        assert!(SetUconfigReg::new(last, &[0]).is_ok());
        assert_eq!(
            SetUconfigReg::new(last, &[0, 0]),
            Err(PacketError::RegisterOutsideWindow {
                opcode: Opcode::SetUconfigReg,
                first: last,
                end: UCONFIG_REG_END + 1,
                window_start: UCONFIG_REG_BASE,
                window_end: UCONFIG_REG_END,
            })
        );
        // The whole window (0x4000 dwords) plus the offset word does not fit one packet body.
        let values = vec![0; 0x4000];
        assert_eq!(
            SetUconfigReg::new(UCONFIG_REG_BASE, &values),
            Err(PacketError::BodyLength { opcode: Opcode::SetUconfigReg, expected: MAX_BODY_DWORDS, found: 0x4001 })
        );
        let window = usize::try_from(UCONFIG_REG_END - UCONFIG_REG_BASE).unwrap();
        assert!(SetUconfigReg::new(UCONFIG_REG_BASE, &values[..window.min(MAX_BODY_DWORDS - 1)]).is_ok());
    }
}
