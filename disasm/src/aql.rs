//! 64-byte AQL packets, with the PM4 packet a PM4-IB packet carries.

use std::io::Write;

use aql_packets::{AqlPacket, PacketControl, decode_slice};
use pm4_encoding::Decoder;
use serde_json::{Value, json};

use crate::input::Words;
use crate::model::{self, Item, Naming};
use crate::render;
use crate::window::{self, Ended, WriteError};

/// AQL packet size in bytes (reference §5).
const PACKET_BYTES: usize = 64;

fn control_items(items: &mut Vec<Item>, c: PacketControl) {
    items.push(Item::Field { name: "BARRIER", value: u64::from(c.barrier) });
    items.push(Item::Enum {
        name: "ACQUIRE_FENCE_SCOPE",
        value: c.acquire.to_u8().into(),
        symbol: Some(c.acquire.name()),
    });
    items.push(Item::Enum {
        name: "RELEASE_FENCE_SCOPE",
        value: c.release.to_u8().into(),
        symbol: Some(c.release.name()),
    });
}

fn field(items: &mut Vec<Item>, name: &'static str, value: impl Into<u64>) {
    items.push(Item::Field { name, value: value.into() });
}

/// The items of one packet, and the PM4 block it carries (PM4-IB only).
fn describe(packet: &AqlPacket, naming: Naming) -> (Vec<Item>, Option<model::Block>) {
    let mut items = Vec::new();
    let mut carried = None;
    match packet {
        AqlPacket::Invalid => {}
        AqlPacket::KernelDispatch(k) => {
            control_items(&mut items, k.control);
            field(&mut items, "DIMENSIONS", k.dimensions.count());
            for (name, v) in
                ["WORKGROUP_SIZE_X", "WORKGROUP_SIZE_Y", "WORKGROUP_SIZE_Z"].into_iter().zip(k.workgroup_size)
            {
                field(&mut items, name, v);
            }
            for (name, v) in ["GRID_SIZE_X", "GRID_SIZE_Y", "GRID_SIZE_Z"].into_iter().zip(k.grid_size) {
                field(&mut items, name, v);
            }
            field(&mut items, "PRIVATE_SEGMENT_SIZE", k.private_segment_size);
            field(&mut items, "GROUP_SEGMENT_SIZE", k.group_segment_size);
            field(&mut items, "KERNEL_OBJECT", k.kernel_object);
            field(&mut items, "KERNARG_ADDRESS", k.kernarg_address);
            field(&mut items, "COMPLETION_SIGNAL", k.completion_signal);
        }
        AqlPacket::BarrierAnd(b) | AqlPacket::BarrierOr(b) => {
            control_items(&mut items, b.control);
            for (name, v) in ["DEP_SIGNAL_0", "DEP_SIGNAL_1", "DEP_SIGNAL_2", "DEP_SIGNAL_3", "DEP_SIGNAL_4"]
                .into_iter()
                .zip(b.dep_signal)
            {
                field(&mut items, name, v);
            }
            field(&mut items, "COMPLETION_SIGNAL", b.completion_signal);
        }
        AqlPacket::AgentDispatch(a) => {
            control_items(&mut items, a.control);
            field(&mut items, "TYPE", a.function);
            field(&mut items, "RETURN_ADDRESS", a.return_address);
            for (name, v) in ["ARG_0", "ARG_1", "ARG_2", "ARG_3"].into_iter().zip(a.arg) {
                field(&mut items, name, v);
            }
            field(&mut items, "COMPLETION_SIGNAL", a.completion_signal);
        }
        AqlPacket::AmdBarrierValue(b) => {
            control_items(&mut items, b.control);
            field(&mut items, "SIGNAL", b.signal);
            field(&mut items, "VALUE", b.value);
            field(&mut items, "MASK", b.mask);
            items.push(Item::Enum { name: "COND", value: b.cond.to_u32().into(), symbol: Some(b.cond.name()) });
            field(&mut items, "COMPLETION_SIGNAL", b.completion_signal);
        }
        AqlPacket::AmdPm4Ib(p) => {
            control_items(&mut items, p.control);
            field(&mut items, "COMPLETION_SIGNAL", p.completion_signal);
            let mut words = [0u32; 4];
            pm4_encoding::Emit::emit(&p.ib, &mut words);
            // The carried packet was validated by the AQL decoder; decode it again for display.
            if let Some(Ok(decoded)) = Decoder::new(&words).next() {
                carried = Some(model::describe(&decoded, naming));
            }
        }
    }
    (items, carried)
}

fn type_name(packet: &AqlPacket) -> String {
    match packet {
        AqlPacket::AmdPm4Ib(_) => "VENDOR_SPECIFIC/AMD_PM4_IB".to_owned(),
        AqlPacket::AmdBarrierValue(_) => "VENDOR_SPECIFIC/AMD_BARRIER_VALUE".to_owned(),
        other => other.packet_type().name().to_owned(),
    }
}

/// Dwords of one AQL packet.
const PACKET_DWORDS: usize = PACKET_BYTES / 4;

/// Disassembles whole 64-byte packets, a window at a time; stops at a packet or trailing bytes
/// that do not decode.
pub(crate) fn run(words: &mut Words, naming: Naming, as_json: bool, out: &mut impl Write) -> Result<Ended, WriteError> {
    let mut window = Vec::with_capacity(window::WINDOW);
    let mut index = 0;
    loop {
        let (ended, input_error) = window::fill(words, &mut window)?;
        let (packets, _) = window.as_chunks::<PACKET_DWORDS>();
        for dwords in packets {
            let mut raw = [0u8; PACKET_BYTES];
            for (bytes, word) in raw.chunks_exact_mut(4).zip(dwords) {
                bytes.copy_from_slice(&word.to_le_bytes());
            }
            if let Some(stopped) = packet(out, index, &raw, naming, as_json)? {
                return Ok(stopped);
            }
            index += 1;
        }
        let whole = packets.len() * PACKET_DWORDS;
        window.drain(..whole);
        if let Some(message) = input_error {
            return Ok(Ended::Stopped(message));
        }
        if ended {
            break;
        }
    }
    let rest = window.len() * 4 + words.trailing_bytes();
    if rest != 0 {
        let msg = format!("{rest} trailing bytes are not a whole 64-byte AQL packet");
        return stop(out, as_json, index * PACKET_BYTES, &msg);
    }
    Ok(Ended::Whole)
}

/// Prints packet `index`; `Some` when it does not decode.
fn packet(
    out: &mut impl Write,
    index: usize,
    raw: &[u8; PACKET_BYTES],
    naming: Naming,
    as_json: bool,
) -> Result<Option<Ended>, WriteError> {
    let byte_offset = index * PACKET_BYTES;
    let header_word = u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
    let packet = match decode_slice(raw) {
        Ok(p) => p,
        Err(err) => return stop(out, as_json, byte_offset, &err.to_string()).map(Some),
    };
    let (items, carried) = describe(&packet, naming);
    if as_json {
        let mut obj = json!({
            "packet": index, "byte_offset": byte_offset, "header_word": format!("{header_word:#010x}"),
            "type": type_name(&packet), "items": items.iter().map(render::json_item).collect::<Vec<Value>>(),
        });
        if let Some(block) = &carried {
            obj["ib_jump_cmd"] = render::json(block);
        }
        serde_json::to_writer(&mut *out, &obj)?;
        out.write_all(b"\n")?;
    } else {
        let mut text =
            format!("packet {index} (byte {byte_offset:#x}): {} header_word={header_word:#010x}\n", type_name(&packet));
        render::text_items(&items, &mut text);
        if let Some(block) = &carried {
            let mut inner = String::new();
            render::text(block, &mut inner);
            text.push_str("    IB_JUMP_CMD:\n");
            for line in inner.lines() {
                text.push_str("        ");
                text.push_str(line);
                text.push('\n');
            }
        }
        out.write_all(text.as_bytes())?;
    }
    Ok(None)
}

fn stop(out: &mut impl Write, as_json: bool, byte_offset: usize, msg: &str) -> Result<Ended, WriteError> {
    if as_json {
        serde_json::to_writer(&mut *out, &json!({ "error": msg, "byte_offset": byte_offset }))?;
        out.write_all(b"\n")?;
    }
    Ok(Ended::Stopped(format!("byte {byte_offset:#x} (AQL packet {}): {msg}", byte_offset / PACKET_BYTES)))
}
