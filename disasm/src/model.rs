//! What a disassembled packet says, independent of how it is printed.

use std::borrow::Cow;

use pm4_encoding::bits::FieldDesc;
use pm4_encoding::disasm::Visitor;
use pm4_encoding::regs::{self, RegisterInfo};
use pm4_encoding::{Decoded, Family, Header, Packet, ShaderType};

/// How register names are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// From one family's map.
    Family(Family),
    /// No architecture given: a register is named only where every family agrees on its name and
    /// fields at that offset (offsets that move between families stay numeric).
    Consensus,
}

impl Naming {
    fn register(self, dword: u32) -> Option<&'static RegisterInfo> {
        match self {
            Naming::Family(f) => regs::lookup(f, dword),
            Naming::Consensus => {
                let mut infos = Family::ALL.into_iter().map(|f| regs::lookup(f, dword));
                let first = infos.next().flatten()?;
                infos.all(|i| i.is_some_and(|i| i.name == first.name && i.fields == first.fields)).then_some(first)
            }
        }
    }
}

/// One decoded item of a packet body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    Field { name: &'static str, value: u64 },
    Enum { name: &'static str, value: u64, symbol: Option<&'static str> },
    Word { name: &'static str, raw: u32, fields: Cow<'static, [FieldDesc]> },
    Register { dword: u32, value: u32, name: Option<&'static str>, fields: &'static [FieldDesc] },
    Payload { name: &'static str, words: Vec<u32> },
}

/// A decoded packet, ready to print.
#[derive(Clone, Debug)]
pub(crate) struct Block {
    pub(crate) offset: usize,
    pub(crate) words: Vec<u32>,
    pub(crate) kind: Kind,
    pub(crate) items: Vec<Item>,
}

/// The header's classification.
#[derive(Clone, Debug)]
pub(crate) enum Kind {
    Type0 { base_reg: u16 },
    Type2,
    Type3 { opcode: String, opcode_value: u8, count: u16, compute: bool, predicate: bool, reset_filter_cam: bool },
}

struct Collector {
    naming: Naming,
    items: Vec<Item>,
}

impl Visitor for Collector {
    fn field(&mut self, name: &'static str, value: u64) {
        self.items.push(Item::Field { name, value });
    }

    fn enum_field(&mut self, name: &'static str, value: u64, symbol: Option<&'static str>) {
        self.items.push(Item::Enum { name, value, symbol });
    }

    fn word(&mut self, name: &'static str, raw: u32, fields: &'static [FieldDesc]) {
        self.items.push(Item::Word { name, raw, fields: Cow::Borrowed(fields) });
    }

    fn register(&mut self, dword: u32, value: u32, _info: Option<&'static RegisterInfo>) {
        let info = self.naming.register(dword);
        self.items.push(Item::Register {
            dword,
            value,
            name: info.map(|i| i.name),
            fields: info.map_or(&[], |i| i.fields),
        });
    }

    fn payload(&mut self, name: &'static str, words: &[u32]) {
        self.items.push(Item::Payload { name, words: words.to_vec() });
    }
}

/// Describes one decoded packet.
pub(crate) fn describe(decoded: &Decoded<'_>, naming: Naming) -> Block {
    let items = match naming {
        Naming::Family(family) => collect(decoded, naming, family),
        Naming::Consensus => consensus(decoded),
    };
    let kind = match Header::decode(decoded.words[0]) {
        Ok(Header::Type3(h)) => Kind::Type3 {
            opcode: h.opcode.to_string(),
            opcode_value: h.opcode.to_u8(),
            count: h.count,
            compute: h.shader_type == ShaderType::Compute,
            predicate: h.predicate,
            reset_filter_cam: h.reset_filter_cam,
        },
        Ok(Header::Type0 { base_reg, .. }) => Kind::Type0 { base_reg },
        // The decoder only yields packets whose header decoded; type 2 is the remaining case.
        Ok(Header::Type1 | Header::Type2) | Err(_) => Kind::Type2,
    };
    debug_assert!(!matches!(decoded.packet, Packet::Type2) || matches!(kind, Kind::Type2));
    Block { offset: decoded.offset, words: decoded.words.to_vec(), kind, items }
}

fn collect(decoded: &Decoded<'_>, naming: Naming, family: Family) -> Vec<Item> {
    let mut collector = Collector { naming, items: Vec::new() };
    decoded.packet.visit(family, &mut collector);
    collector.items
}

/// Items as every family would show them: a control word keeps only the fields that all three
/// families name identically (DISPATCH_INITIATOR bit 12 is RESERVED on gfx10.3/gfx11 but
/// PING_PONG_EN on gfx12, for example).
fn consensus(decoded: &Decoded<'_>) -> Vec<Item> {
    let [first, rest @ ..] = Family::ALL.map(|f| collect(decoded, Naming::Consensus, f));
    first
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Item::Word { name, raw, fields } => {
                let agreed = |f: &FieldDesc| {
                    rest.iter().all(|other| match other.get(i) {
                        Some(Item::Word { fields: theirs, .. }) => theirs.contains(f),
                        _ => false,
                    })
                };
                let kept: Vec<FieldDesc> = fields.iter().copied().filter(agreed).collect();
                Item::Word { name, raw, fields: Cow::Owned(kept) }
            }
            other => other,
        })
        .collect()
}
