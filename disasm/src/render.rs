//! Printing decoded packets as text blocks or JSON lines.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::model::{Block, Item, Kind};
use pm4_encoding::bits::FieldDesc;

/// Text: one block per packet, a header line then one line per field.
pub(crate) fn text(block: &Block, out: &mut String) {
    let byte = block.offset * 4;
    let _ = write!(out, "{:#06x} (byte {byte:#x}): ", block.offset);
    match &block.kind {
        Kind::Type3 { opcode, opcode_value, count, compute, predicate, reset_filter_cam } => {
            let _ = write!(out, "{opcode} [{opcode_value:#04x}] header={:#010x} count={count}", block.words[0]);
            if *compute {
                out.push_str(" compute");
            }
            if *predicate {
                out.push_str(" predicate");
            }
            if *reset_filter_cam {
                out.push_str(" reset_filter_cam");
            }
        }
        Kind::Type0 { base_reg } => {
            let _ = write!(out, "TYPE0 base={base_reg:#06x} header={:#010x}", block.words[0]);
        }
        Kind::Type2 => {
            let _ = write!(out, "TYPE2 filler header={:#010x}", block.words[0]);
        }
    }
    let n = block.words.len();
    let _ = writeln!(out, " ({n} dword{})", if n == 1 { "" } else { "s" });
    text_items(&block.items, out);
}

/// Prints `items`; an enum field that restates a field of the control word printed just before
/// it (`GLI_INV = 1 (ALL)` after `GCR_CNTL`) is folded into that word's field line instead of
/// being printed twice.
pub(crate) fn text_items(items: &[Item], out: &mut String) {
    let mut i = 0;
    while i < items.len() {
        if let Item::Word { name, raw, fields } = &items[i] {
            let mut symbols: Vec<(&str, &str)> = Vec::new();
            let mut j = i + 1;
            while let Some(Item::Enum { name: field, value, symbol: Some(symbol) }) = items.get(j) {
                let restates = fields.iter().any(|f| f.name == *field && u64::from(f.get(*raw)) == *value);
                if !restates {
                    break;
                }
                symbols.push((field, symbol));
                j += 1;
            }
            let _ = writeln!(out, "    {name} = {raw:#010x}");
            text_fields_with(*raw, fields, &symbols, out);
            i = j;
        } else {
            text_item(&items[i], out);
            i += 1;
        }
    }
}

pub(crate) fn text_item(item: &Item, out: &mut String) {
    match item {
        Item::Field { name, value } => {
            let _ = writeln!(out, "    {name} = {value:#x} ({value})");
        }
        Item::Enum { name, value, symbol } => {
            let _ = writeln!(out, "    {name} = {value} ({})", symbol.unwrap_or("unknown value"));
        }
        Item::Word { name, raw, fields } => {
            let _ = writeln!(out, "    {name} = {raw:#010x}");
            text_fields(*raw, fields, out);
        }
        Item::Register { dword, value, name, fields } => {
            let label = name.unwrap_or("(unnamed register)");
            let _ = writeln!(out, "    {label} [{dword:#06x}] = {value:#010x}");
            text_fields(*value, fields, out);
        }
        Item::Payload { name, words } => {
            let _ = write!(out, "    {name} ({} dwords):", words.len());
            for (i, w) in words.iter().enumerate() {
                if i % 8 == 0 && i > 0 {
                    out.push_str("\n        ");
                } else {
                    out.push(' ');
                }
                let _ = write!(out, "{w:#010x}");
            }
            out.push('\n');
        }
    }
}

fn text_fields(raw: u32, fields: &[FieldDesc], out: &mut String) {
    text_fields_with(raw, fields, &[], out);
}

fn text_fields_with(raw: u32, fields: &[FieldDesc], symbols: &[(&str, &str)], out: &mut String) {
    let mut known = 0u32;
    for f in fields {
        known |= f.mask();
        let symbol = symbols.iter().find(|(n, _)| *n == f.name).map_or(String::new(), |(_, s)| format!(" ({s})"));
        if f.hi == f.lo {
            let _ = writeln!(out, "        {} [{}] = {}{symbol}", f.name, f.lo, f.get(raw));
        } else {
            let _ = writeln!(out, "        {} [{}:{}] = {}{symbol}", f.name, f.hi, f.lo, f.get(raw));
        }
    }
    if !fields.is_empty() && raw & !known != 0 {
        let _ = writeln!(out, "        (bits outside named fields: {:#010x})", raw & !known);
    }
}

/// JSON: one object per packet.
pub(crate) fn json(block: &Block) -> Value {
    let mut obj = Map::new();
    obj.insert("offset".into(), json!(block.offset));
    obj.insert("byte_offset".into(), json!(block.offset * 4));
    obj.insert("dwords".into(), json!(block.words.len()));
    obj.insert("header".into(), json!(format!("{:#010x}", block.words[0])));
    match &block.kind {
        Kind::Type3 { opcode, opcode_value, count, compute, predicate, reset_filter_cam } => {
            obj.insert("type".into(), json!(3));
            obj.insert("opcode".into(), json!(opcode));
            obj.insert("opcode_value".into(), json!(opcode_value));
            obj.insert("count".into(), json!(count));
            obj.insert("shader_type".into(), json!(if *compute { "compute" } else { "graphics" }));
            obj.insert("predicate".into(), json!(predicate));
            obj.insert("reset_filter_cam".into(), json!(reset_filter_cam));
        }
        Kind::Type0 { base_reg } => {
            obj.insert("type".into(), json!(0));
            obj.insert("base_reg".into(), json!(base_reg));
        }
        Kind::Type2 => {
            obj.insert("type".into(), json!(2));
        }
    }
    obj.insert("items".into(), Value::Array(block.items.iter().map(json_item).collect()));
    obj.insert("words".into(), json!(block.words));
    Value::Object(obj)
}

pub(crate) fn json_item(item: &Item) -> Value {
    match item {
        Item::Field { name, value } => json!({ "field": name, "value": value }),
        Item::Enum { name, value, symbol } => json!({ "field": name, "value": value, "symbol": symbol }),
        Item::Word { name, raw, fields } => json!({ "field": name, "value": raw, "fields": json_fields(*raw, fields) }),
        Item::Register { dword, value, name, fields } => {
            json!({ "register": name, "dword": dword, "value": value, "fields": json_fields(*value, fields) })
        }
        Item::Payload { name, words } => json!({ "payload": name, "words": words }),
    }
}

fn json_fields(raw: u32, fields: &[FieldDesc]) -> Value {
    Value::Object(fields.iter().map(|f| (f.name.to_owned(), json!(f.get(raw)))).collect())
}
