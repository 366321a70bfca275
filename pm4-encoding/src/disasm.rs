//! The disassembler's model: every packet reports its fields to a [`Visitor`], so that text,
//! JSON or any other rendering is written once, outside this crate, without allocation here.

use crate::bits::FieldDesc;
use crate::regs::RegisterInfo;

/// Receives the decoded fields of one packet, in body order.
pub trait Visitor {
    /// A numeric field of the packet body (`DIM_X`, `ADDRESS`, `COHER_SIZE`).
    fn field(&mut self, name: &'static str, value: u64);

    /// A field whose value has a symbolic meaning (`EVENT_TYPE` = `CS_PARTIAL_FLUSH`); `symbol`
    /// is `None` for values without a known name.
    fn enum_field(&mut self, name: &'static str, value: u64, symbol: Option<&'static str>);

    /// A whole control word with its bit-field table (`GCR_CNTL`, `DISPATCH_INITIATOR`).
    fn word(&mut self, name: &'static str, raw: u32, fields: &'static [FieldDesc]);

    /// A register write to absolute dword `dword`; `info` names it from the family's map when the
    /// register is known there.
    fn register(&mut self, dword: u32, value: u32, info: Option<&'static RegisterInfo>);

    /// Opaque payload dwords (NOP bodies, WRITE_DATA data, untyped packets).
    fn payload(&mut self, name: &'static str, words: &[u32]);
}
