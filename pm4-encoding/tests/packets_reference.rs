//! Checks the packet modules against the machine-readable reference table
//! (`reference/amd-reference.json`, section `pm4`): opcode values, the bit ranges of every typed
//! control word, the value names of every typed field enum, body dword positions, and the derived
//! example words. Where the table spells a name differently (alternatives, notes), an explicit,
//! commented mapping says which Rust field it is.

use std::collections::BTreeMap;

use pm4_encoding::bits::FieldDesc;
use pm4_encoding::packet::acquire_mem::{GcrSeq, Gl1Range, Gl2Range, GliInv};
use pm4_encoding::packet::copy_data::{self, CopyDataControl};
use pm4_encoding::packet::dispatch_direct::DispatchInitiator;
use pm4_encoding::packet::event_write::{EventType, EventWriteControl};
use pm4_encoding::packet::indirect_buffer::IbControl;
use pm4_encoding::packet::reg_write::RegWriteControl;
use pm4_encoding::packet::release_mem::{self, DataCntl, EventCntl};
use pm4_encoding::packet::wait_reg_mem::{self, WaitRegMemControl, WaitRegMemPollInterval};
use pm4_encoding::packet::write_data::{self, WriteDataControl};
use pm4_encoding::packet::{
    AcquireMem, CopyData, DispatchDirect, DispatchIndirect, EventWrite, GcrCntl, IndirectBuffer, Nop, ReleaseMem,
    SetShReg, SetUconfigReg, WaitRegMem, WriteData,
};
use pm4_encoding::{Emit, Family, HeaderFlags, Opcode, Type3Header};
use serde_json::Value;

fn reference() -> Value {
    serde_json::from_str(include_str!("../../reference/amd-reference.json")).expect("the reference JSON parses")
}

fn pm4() -> Value {
    reference()["pm4"].clone()
}

fn packet(name: &str) -> Value {
    let p = pm4()["packets"][name].clone();
    assert!(p.is_object(), "the reference has no packet {name}");
    p
}

/// `"0x3F"` → 0x3F.
fn hex(s: &str) -> u32 {
    let digits = s.trim().strip_prefix("0x").unwrap_or_else(|| panic!("{s:?} is not 0x-prefixed hex"));
    u32::from_str_radix(digits, 16).unwrap()
}

/// Every `0x…` number in a free-text string, in order.
fn hex_numbers(s: &str) -> Vec<u32> {
    s.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| t.starts_with("0x"))
        .map(|t| u32::from_str_radix(&t[2..], 16).unwrap())
        .collect()
}

/// `"[18:17]"` → (18, 17); `"[7]"` → (7, 7).
fn bit_range(s: &str) -> (u8, u8) {
    let inner = s.trim().strip_prefix('[').and_then(|s| s.strip_suffix(']')).expect("a [hi:lo] range");
    match inner.split_once(':') {
        Some((hi, lo)) => (hi.parse().unwrap(), lo.parse().unwrap()),
        None => {
            let b = inner.parse().unwrap();
            (b, b)
        }
    }
}

/// Asserts that `ours` has exactly the fields of the JSON list `json`, at the same bits.
/// `rename` maps a JSON name to the name this crate uses for it.
fn assert_fields(what: &str, ours: &[FieldDesc], json: &Value, rename: &[(&str, &str)]) {
    let json = json.as_array().unwrap_or_else(|| panic!("{what}: no field list"));
    let expected: BTreeMap<String, (u8, u8)> = json
        .iter()
        .map(|f| {
            let name = f["name"].as_str().unwrap();
            let name = rename.iter().find(|(j, _)| *j == name).map_or(name, |(_, o)| o);
            (name.to_owned(), bit_range(f["bits"].as_str().unwrap()))
        })
        .collect();
    let actual: BTreeMap<String, (u8, u8)> = ours.iter().map(|f| (f.name.to_owned(), (f.hi, f.lo))).collect();
    assert_eq!(actual, expected, "{what}: field table differs from the reference");
    assert_eq!(ours.len(), json.len(), "{what}: duplicate field names");
    for (j, _) in rename {
        assert!(json.iter().any(|f| f["name"] == *j), "{what}: rename of {j:?} is stale");
    }
}

/// The field list of body dword `dw` of packet `name`.
fn body_fields(name: &str, dw: u64) -> Value {
    packet(name)["body"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["dw"].as_u64() == Some(dw))
        .unwrap_or_else(|| panic!("{name} dw{dw} missing"))["fields"]
        .clone()
}

/// The description of field `field` in a JSON field list.
fn field_desc(fields: &Value, field: &str) -> String {
    fields.as_array().unwrap().iter().find(|f| f["name"] == field).unwrap_or_else(|| panic!("no field {field}"))["desc"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The reference's spelling of a value name in the form this crate uses: upper case, runs of
/// non-alphanumerics as one `_` (`"queue write-pointer register"` → `QUEUE_WRITE_POINTER_REGISTER`);
/// pure symbols stay as they are (`"<="`).
fn normalize(text: &str) -> String {
    let mut out = String::new();
    for c in text.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_uppercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_end_matches('_').to_owned();
    if out.is_empty() { text.trim().to_owned() } else { out }
}

/// An explicit reading of a value token that is not a plain number (`"4-6"`, `"7/8"`): the values
/// it stands for and each one's name, `None` when the reference does not name it.
type Special<'a> = (&'a str, &'a [(u32, Option<&'a str>)]);

/// The `value name` pairs of a field description such as `"0 ALL,2 RANGE,3 FIRST_LAST (1
/// reserved)"`: parenthesised notes, everything after a `;` and a leading `label:` are dropped. Value tokens that
/// are not plain numbers go through `special`, which must know every one of them.
fn value_names(desc: &str, special: &[Special]) -> BTreeMap<u32, Option<String>> {
    let mut text = String::new();
    let mut depth = 0;
    for c in desc.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => text.push(c),
            _ => {}
        }
    }
    let text = text.split(';').next().unwrap();
    // A leading label ("instruction cache: 0 NOP,...") is not part of the list.
    let text = text.split_once(':').map_or(text, |(_, list)| list);
    let mut map = BTreeMap::new();
    for item in text.split(',') {
        let item = item.trim();
        let (token, name) = item.split_once(' ').unwrap_or((item, ""));
        if let Ok(value) = token.parse::<u32>() {
            // An empty name ("4 (see discrepancies)") means the reference gives the value no name.
            let name = if name.trim().is_empty() { None } else { Some(normalize(name)) };
            map.insert(value, name);
        } else {
            let (_, values) = special
                .iter()
                .find(|(t, _)| *t == token)
                .unwrap_or_else(|| panic!("value token {token:?} in {desc:?} needs an explicit mapping"));
            for (value, name) in *values {
                map.insert(*value, name.map(str::to_owned));
            }
        }
    }
    map
}

/// Asserts that a field enum names exactly the values the reference names, with the same names,
/// for every value of a field `width` bits wide.
fn assert_values(
    what: &str,
    width: u32,
    ours: impl Fn(u32) -> Option<&'static str>,
    reference: &BTreeMap<u32, Option<String>>,
) {
    for value in 0..(1u32 << width) {
        let expected = reference.get(&value).cloned().flatten();
        assert_eq!(ours(value).map(str::to_owned), expected, "{what} value {value}");
    }
}

fn width(fields: &[FieldDesc], name: &str) -> u32 {
    fields.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no field {name}")).width()
}

/// Builds a word from `"A|B|C(3)|D(0x14)"` using `fields` (a bare name sets the field to 1);
/// `rename` maps the example's names to this crate's.
fn compose(fields: &[FieldDesc], expr: &str, rename: &[(&str, &str)]) -> u32 {
    expr.split('|')
        .map(|term| {
            let term = term.trim();
            let (name, value) = match term.split_once('(') {
                Some((name, v)) => {
                    let v = v.strip_suffix(')').unwrap();
                    (name, if v.starts_with("0x") { hex(v) } else { v.parse().unwrap() })
                }
                None => (term, 1),
            };
            let name = rename.iter().find(|(j, _)| *j == name).map_or(name, |(_, o)| o);
            let f = fields.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no field {name}"));
            assert!(value <= f.mask() >> f.lo, "{name}({value}) does not fit");
            value << f.lo
        })
        .fold(0, |word, bits| word | bits)
}

fn emit(p: &impl Emit) -> Vec<u32> {
    let mut out = vec![0; p.buffer_len()];
    p.emit(&mut out);
    out
}

/// Asserts that every body dword the reference names for `name` holds the value `by_name` gives
/// for that name in `words`, and that the header COUNT matches the reference's `count`.
fn assert_positions(name: &str, words: &[u32], by_name: &[(&str, u32)]) {
    let p = packet(name);
    let header = Type3Header::decode(words[0]).unwrap();
    assert_eq!(header.opcode.to_u8(), u8::try_from(hex(p["opcode"].as_str().unwrap())).unwrap(), "{name} opcode");
    if let Some(count) = p["count"].as_u64() {
        assert_eq!(u64::from(header.count), count, "{name} COUNT");
    }
    let mut checked = 0;
    for entry in p["body"].as_array().unwrap() {
        let (Some(dw), Some(field)) = (entry["dw"].as_u64(), entry["name"].as_str()) else { continue };
        let (_, value) =
            by_name.iter().find(|(n, _)| *n == field).unwrap_or_else(|| panic!("{name}: no value for {field}"));
        assert_eq!(words[1 + usize::try_from(dw).unwrap()], *value, "{name} dw{dw} {field}");
        checked += 1;
    }
    assert_eq!(checked, by_name.len(), "{name}: every listed dword is in the reference");
}

#[test]
fn opcodes_match_the_table() {
    let table = pm4()["opcodes"].as_array().unwrap().clone();
    for entry in &table {
        let name = entry["name"].as_str().unwrap();
        let value = u8::try_from(hex(entry["opcode"].as_str().unwrap())).unwrap();
        assert_eq!(Opcode::from_u8(value).name(), Some(name), "opcode {value:#04x}");
    }
    assert_eq!(Opcode::ALL.len(), table.len());
    for op in Opcode::ALL {
        let listed =
            |e: &Value| e["name"] == op.name().unwrap() && hex(e["opcode"].as_str().unwrap()) == u32::from(op.to_u8());
        assert!(table.iter().any(listed), "{op} is not in the reference");
    }
}

#[test]
fn derived_headers() {
    let examples = pm4()["header_type3"]["example_derived"].clone();
    let first = |key: &str| hex_numbers(examples[key].as_str().unwrap())[0];
    let values = [7];
    assert_eq!(emit(&SetShReg::new(0x2E40, &values).unwrap())[0], first("SET_SH_REG with 1 value"));
    assert_eq!(
        emit(&DispatchDirect::new(1, 1, 1, DispatchInitiator::typical(true)))[0],
        first("DISPATCH_DIRECT compute")
    );
    let d32 = DataCntl::from_raw(0x2000_0000);
    assert_eq!(emit(&ReleaseMem::new(EventCntl::default(), d32, 0, 0).unwrap())[0], first("RELEASE_MEM"));
    assert_eq!(emit(&AcquireMem::full_range(GcrCntl::default()))[0], first("ACQUIRE_MEM"));
    assert_eq!(emit(&IndirectBuffer::call(0x1000, 4).unwrap())[0], first("INDIRECT_BUFFER"));
    assert_eq!(emit(&Nop::HEADER_ONLY), [first("one-dword NOP")]);
    assert!(packet("NOP")["special"].as_str().unwrap().contains("count=0x3FFF"));
}

#[test]
fn gcr_cntl() {
    let gcr = pm4()["gcr_cntl"].clone();
    assert_fields("GCR_CNTL", GcrCntl::FIELDS, &gcr["fields"], &[]);
    let desc = |f: &str| field_desc(&gcr["fields"], f);
    let f = GcrCntl::FIELDS;
    assert_values("GLI_INV", width(f, "GLI_INV"), |v| GliInv::from_raw(v).name(), &value_names(&desc("GLI_INV"), &[]));
    assert_values(
        "GL1_RANGE",
        width(f, "GL1_RANGE"),
        |v| Gl1Range::from_raw(v).name(),
        &value_names(&desc("GL1_RANGE"), &[]),
    );
    assert_values(
        "GL2_RANGE",
        width(f, "GL2_RANGE"),
        |v| Gl2Range::from_raw(v).name(),
        &value_names(&desc("GL2_RANGE"), &[]),
    );
    assert_values("SEQ", width(f, "SEQ"), |v| GcrSeq::from_raw(v).name(), &value_names(&desc("SEQ"), &[]));
}

#[test]
fn acquire_mem() {
    let p = packet("ACQUIRE_MEM");
    // "GL2_INV|...|GLI_INV(1) = 0x0000C3B1": the field set, composed through GcrCntl::FIELDS,
    // gives the stated word, and the constructor carries it to dw6.
    let example = p["example_linux_full_flush_gcr_cntl_derived"].as_str().unwrap();
    let (expr, rest) = example.split_once('=').unwrap();
    let word = hex_numbers(rest)[0];
    assert_eq!(compose(GcrCntl::FIELDS, expr, &[]), word);
    let words = emit(&AcquireMem::full_range(GcrCntl::from_raw(word)));
    // COHER_SIZE / COHER_SIZE_HI / POLL_INTERVAL: the values the descriptions give for drivers.
    assert_eq!(hex_numbers(p["body"][1]["desc"].as_str().unwrap())[0], words[2]);
    assert_eq!(hex_numbers(p["body"][2]["desc"].as_str().unwrap())[0], words[3], "Linux's COHER_SIZE_HI");
    assert_eq!(hex_numbers(p["body"][5]["desc"].as_str().unwrap())[0], words[6]);
    assert_positions(
        "ACQUIRE_MEM",
        &words,
        &[
            ("COHER_CNTL", 0),
            ("COHER_SIZE", 0xFFFF_FFFF),
            ("COHER_SIZE_HI", 0x00FF_FFFF),
            ("COHER_BASE_LO", 0),
            ("COHER_BASE_HI", 0),
            ("POLL_INTERVAL", 0xA),
            ("GCR_CNTL", word),
        ],
    );
}

#[test]
fn release_mem() {
    let p = packet("RELEASE_MEM");
    let event_fields = body_fields("RELEASE_MEM", 0);
    let data_fields = body_fields("RELEASE_MEM", 1);
    assert_fields("RELEASE_MEM EVENT_CNTL", EventCntl::FIELDS, &event_fields, &[]);
    assert_fields("RELEASE_MEM DATA_CNTL", DataCntl::FIELDS, &data_fields, &[]);

    let d = DataCntl::FIELDS;
    let desc = |f: &str| field_desc(&data_fields, f);
    assert_values(
        "DST_SEL",
        width(d, "DST_SEL"),
        |v| release_mem::DstSel::from_raw(v).name(),
        &value_names(&desc("DST_SEL"), &[]),
    );
    // "4-6 int_ctxid variants": the reference groups them without individual names, so the enum
    // leaves 4, 5 and 6 `Unknown`.
    let int_sel = value_names(&desc("INT_SEL"), &[("4-6", &[(4, None), (5, None), (6, None)])]);
    assert_values("INT_SEL", width(d, "INT_SEL"), |v| release_mem::IntSel::from_raw(v).name(), &int_sel);
    assert_values(
        "DATA_SEL",
        width(d, "DATA_SEL"),
        |v| release_mem::DataSel::from_raw(v).name(),
        &value_names(&desc("DATA_SEL"), &[]),
    );
    // EVENT_TYPE uses the VGT event types of EVENT_WRITE; the examples in its description agree.
    let examples = field_desc(&event_fields, "EVENT_TYPE");
    let examples: Vec<(&str, &str)> =
        examples.split(", ").filter_map(|s| s.trim_start_matches("e.g. ").split_once('=')).collect();
    assert_eq!(examples.len(), 3);
    for (name, value) in examples {
        assert_eq!(EventType::from_raw(u8::try_from(hex(value)).unwrap()).name(), Some(name));
    }

    // Derived examples: "0x06603514 = GCR_SEQ|GL2_WB|GLM_INV|GLM_WB|CACHE_POLICY(3)|EVENT_TYPE(0x14)|EVENT_INDEX(5)".
    // The examples name the cache bits as GCR_CNTL does; in EVENT_CNTL they carry a GCR_ prefix.
    let rename = [("GL2_WB", "GCR_GL2_WB"), ("GLM_INV", "GCR_GLM_INV"), ("GLM_WB", "GCR_GLM_WB")];
    let examples = p["linux_fence_examples_derived"].clone();
    for key in ["gfx10_3/gfx11 EVENT_CNTL", "gfx12 EVENT_CNTL"] {
        let (word, expr) = examples[key].as_str().unwrap().split_once('=').unwrap();
        assert_eq!(compose(EventCntl::FIELDS, expr, &rename), hex(word), "{key}");
    }
    // "0x20000000; 64-bit: 0x40000000; with interrupt INT_SEL=2 adds 0x02000000".
    let data = hex_numbers(examples["DATA_CNTL 32-bit value, no irq"].as_str().unwrap());
    use release_mem::{DataSel, DstSel, IntSel};
    assert_eq!(
        data,
        [
            DataCntl::new(DstSel::MemoryController, IntSel::NoInterrupt, DataSel::Data32Low).raw(),
            DataCntl::new(DstSel::MemoryController, IntSel::NoInterrupt, DataSel::Data64).raw(),
            DataCntl::from_raw(0).with_int_sel_raw(2).raw(),
        ]
    );

    let d64 = DataCntl::new(DstSel::TcL2, IntSel::InterruptAfterWriteConfirm, DataSel::Data64);
    let mut r = ReleaseMem::new(EventCntl::from_raw(0x0660_3514), d64, 0x1_2345_6788, 0xAAAA_BBBB_CCCC_DDDD).unwrap();
    r.int_ctxid = 0x77;
    let words = emit(&r);
    assert_eq!(p["total_dwords"].as_u64(), Some(u64::try_from(words.len()).unwrap()));
    assert_positions(
        "RELEASE_MEM",
        &words,
        &[
            ("EVENT_CNTL", 0x0660_3514),
            ("DATA_CNTL", d64.raw()),
            ("ADDRESS_LO", 0x2345_6788),
            ("ADDRESS_HI", 0x1),
            ("DATA_LO", 0xCCCC_DDDD),
            ("DATA_HI", 0xAAAA_BBBB),
            ("INT_CTXID", 0x77),
        ],
    );
}

#[test]
fn wait_reg_mem() {
    let control = body_fields("WAIT_REG_MEM", 0);
    // "CACHE_POLICY/TEMPORAL": two names for the same bits; the crate uses CACHE_POLICY.
    assert_fields(
        "WAIT_REG_MEM control",
        WaitRegMemControl::FIELDS,
        &control,
        &[("CACHE_POLICY/TEMPORAL", "CACHE_POLICY")],
    );
    assert_fields("WAIT_REG_MEM POLL_INTERVAL", WaitRegMemPollInterval::FIELDS, &body_fields("WAIT_REG_MEM", 5), &[]);
    let c = WaitRegMemControl::FIELDS;
    let desc = |f: &str| field_desc(&control, f);
    use wait_reg_mem::{Function, MemSpace, Operation};
    assert_values(
        "FUNCTION",
        width(c, "FUNCTION"),
        |v| Function::from_raw(v).name(),
        &value_names(&desc("FUNCTION"), &[]),
    );
    assert_values(
        "MEM_SPACE",
        width(c, "MEM_SPACE"),
        |v| MemSpace::from_raw(v).name(),
        &value_names(&desc("MEM_SPACE"), &[]),
    );
    assert_values(
        "OPERATION",
        width(c, "OPERATION"),
        |v| Operation::from_raw(v).name(),
        &value_names(&desc("OPERATION"), &[]),
    );

    let p = WaitRegMem::memory(Function::NotEqual, 0x7F00_1234_5678, 0x11, 0x22, 0x33).unwrap();
    let words = emit(&p);
    // The JSON names dw1/dw2 by both of their uses.
    assert_positions(
        "WAIT_REG_MEM",
        &words,
        &[
            ("POLL_ADDRESS_LO / REG", 0x1234_5678),
            ("POLL_ADDRESS_HI / REG_WRITE_ADDR", 0x7F00),
            ("REFERENCE", 0x11),
            ("MASK", 0x22),
            ("POLL_INTERVAL", 0x33),
        ],
    );
    assert_eq!(words[1], 0x0000_0014, "FUNCTION != (4) | MEM_SPACE memory (1 << 4)");
}

#[test]
fn write_data() {
    let control = packet("WRITE_DATA")["body"][0]["fields"].clone();
    // "WR_ONE_ADDR / ADDR_INCR": the same bit under its two names; the crate uses WR_ONE_ADDR.
    assert_fields(
        "WRITE_DATA CONTROL",
        WriteDataControl::FIELDS,
        &control,
        &[("WR_ONE_ADDR / ADDR_INCR", "WR_ONE_ADDR")],
    );
    let width = width(WriteDataControl::FIELDS, "DST_SEL");
    let names = value_names(&field_desc(&control, "DST_SEL"), &[]);
    assert_values("WRITE_DATA DST_SEL", width, |v| write_data::DstSel::from_raw(v).name(), &names);

    let data = [0xD0, 0xD1, 0xD2];
    let p = WriteData::memory(0x7F00_1234_5678, &data).unwrap();
    let words = emit(&p);
    assert_positions(
        "WRITE_DATA",
        &words,
        &[("CONTROL", p.control.raw()), ("DST_ADDR_LO", 0x1234_5678), ("DST_ADDR_HI", 0x7F00)],
    );
    // dw "3..": the data; "count = N+2".
    let body = packet("WRITE_DATA")["body"].clone();
    assert_eq!((body[3]["dw"].as_str(), body[3]["name"].as_str()), (Some("3.."), Some("DATA")));
    assert_eq!(words[4..], data);
    assert_eq!(Type3Header::decode(words[0]).unwrap().count, 3 + 2);
}

#[test]
fn copy_data() {
    let p = packet("COPY_DATA");
    let control = p["body"][0]["fields"].clone();
    assert_fields("COPY_DATA CONTROL", CopyDataControl::FIELDS, &control, &[]);
    let c = CopyDataControl::FIELDS;
    // "7/8 GDS atomic return data 0/1": two values in one entry.
    let src = value_names(
        &field_desc(&control, "SRC_SEL"),
        &[("7/8", &[(7, Some("GDS_ATOMIC_RETURN_DATA_0")), (8, Some("GDS_ATOMIC_RETURN_DATA_1"))])],
    );
    assert_values("SRC_SEL", width(c, "SRC_SEL"), |v| copy_data::SrcSel::from_raw(v).name(), &src);
    let dst = value_names(&field_desc(&control, "DST_SEL"), &[]);
    assert_values("COPY_DATA DST_SEL", width(c, "DST_SEL"), |v| copy_data::DstSel::from_raw(v).name(), &dst);

    // "SRC_SEL=9, DST_SEL=5, COUNT_SEL=1, WR_CONFIRM=1 -> control 0x00110509".
    let recipe = p["timestamp_recipe"].as_str().unwrap();
    let (assignments, word) = recipe.split_once("->").unwrap();
    let expr: Vec<String> = assignments
        .split(',')
        .map(|a| {
            let (name, value) = a.trim().split_once('=').unwrap();
            format!("{name}({value})")
        })
        .collect();
    assert_eq!(compose(c, &expr.join("|"), &[]), hex_numbers(word)[0]);
    assert_eq!(CopyDataControl::TIMESTAMP.raw(), hex_numbers(word)[0]);

    let words = emit(&CopyData::timestamp(0x7F00_0000_1008).unwrap());
    assert_positions(
        "COPY_DATA",
        &words,
        &[
            ("CONTROL", 0x0011_0509),
            ("SRC_ADDR_LO / SRC_REG / IMM_DATA", 0),
            ("SRC_ADDR_HI / IMM_DATA_HI", 0),
            ("DST_ADDR_LO / DST_REG", 0x1008),
            ("DST_ADDR_HI", 0x7F00),
        ],
    );
}

#[test]
fn indirect_buffer() {
    let control = packet("INDIRECT_BUFFER")["body"][2]["fields"].clone();
    // The reference lists alternative names and queue notes in the name; the crate keeps the first name.
    let rename = [
        ("PRE_ENA / OFFLOAD_POLLING", "PRE_ENA"),
        ("INHERIT_VMID (gfx queue, MES user queues)", "INHERIT_VMID"),
        ("CACHE_POLICY/TEMPORAL", "CACHE_POLICY"),
        ("INHERIT_VMID_MQD (compute, MES user queues) / PRE_RESUME (gfx)", "INHERIT_VMID_MQD"),
    ];
    assert_fields("INDIRECT_BUFFER CONTROL", IbControl::FIELDS, &control, &rename);
    let p = IndirectBuffer::call(0x7F12_3456_7800, 64).unwrap();
    assert_positions(
        "INDIRECT_BUFFER",
        &emit(&p),
        &[("IB_BASE_LO", 0x3456_7800), ("IB_BASE_HI", 0x7F12), ("CONTROL", p.control.raw())],
    );
}

#[test]
fn event_write() {
    let p = packet("EVENT_WRITE");
    assert_fields("EVENT_WRITE dw0", EventWriteControl::FIELDS, &p["body"][0]["fields"], &[]);
    let types = p["event_types"].as_object().unwrap();
    for (name, value) in types {
        let value = u8::try_from(value.as_u64().unwrap()).unwrap();
        assert_eq!(EventType::from_raw(value).name(), Some(name.as_str()), "event type {value}");
    }
    assert_eq!(EventType::ALL.len(), types.len());
    for e in EventType::ALL {
        assert_eq!(types[e.name().unwrap()].as_u64(), Some(u64::from(e.raw())));
    }
    // "... -> body dword 0x00000407 (derived)".
    let cs_partial_flush = hex_numbers(p["cs_partial_flush"].as_str().unwrap());
    let words = emit(&EventWrite::cs_partial_flush());
    assert_eq!(words[1], *cs_partial_flush.last().unwrap());
    assert_eq!(Type3Header::decode(words[0]).unwrap().count, 0, "count 0 for non-sample events");
    // "1-2 ADDRESS_LO/HI": a sample event carries the address in dw1..2 (count 2).
    let sample = emit(&EventWrite::with_address(EventType::SamplePipelinestat, 2, 0x7F00_1234_5678).unwrap());
    assert_eq!((p["body"][1]["dw"].as_str(), p["body"][1]["name"].as_str()), (Some("1-2"), Some("ADDRESS_LO/HI")));
    assert_eq!(sample[2..], [0x1234_5678, 0x7F00]);
    assert_eq!(Type3Header::decode(sample[0]).unwrap().count, 2);
}

#[test]
fn register_writes() {
    let fields = body_fields("SET_SH_REG", 0);
    assert_fields("SET_SH_REG dw0", RegWriteControl::FIELDS, &fields, &[]);
    // "absolute_dword - 0x2C00" and "REG_OFFSET = absolute_dword - 0xC000".
    let sh_base = hex_numbers(&field_desc(&fields, "REG_OFFSET"))[0];
    let uconfig_base = hex_numbers(packet("SET_UCONFIG_REG")["layout"].as_str().unwrap())[0];
    let values = [1, 2];
    let sh = SetShReg::new(sh_base + 0x240, &values).unwrap();
    assert_eq!(emit(&sh)[..2], [0xC002_7600, 0x240]);
    let uconfig = SetUconfigReg::new(uconfig_base + 0x10, &values).unwrap();
    assert_eq!(emit(&uconfig)[..2], [0xC002_7900, 0x10]);
    // "count: N (number of register values); packet = 2+N dwords".
    assert_eq!(sh.buffer_len(), 2 + values.len());
}

#[test]
fn dispatch() {
    let p = packet("DISPATCH_DIRECT");
    // "derived: wave32 = 0x8045, wave64 = 0x0045".
    let typical = hex_numbers(p["typical_initiator"].as_str().unwrap());
    assert_eq!(typical, [DispatchInitiator::typical(true).raw(), DispatchInitiator::typical(false).raw()]);
    let d = DispatchDirect::new(0x11, 0x22, 0x33, DispatchInitiator::typical(true));
    assert_eq!(d.flags, HeaderFlags::COMPUTE, "Mesa sets SHADER_TYPE=1");
    assert_positions(
        "DISPATCH_DIRECT",
        &emit(&d),
        &[("DIM_X", 0x11), ("DIM_Y", 0x22), ("DIM_Z", 0x33), ("DISPATCH_INITIATOR", 0x8045)],
    );
    let i = DispatchIndirect::new(0x18, DispatchInitiator::typical(false));
    assert_positions("DISPATCH_INDIRECT", &emit(&i), &[("DATA_OFFSET", 0x18), ("DISPATCH_INITIATOR", 0x45)]);

    // DispatchInitiator names exactly the bits all three families name alike.
    let reg = reference()["register_fields"]["COMPUTE_DISPATCH_INITIATOR"].clone();
    let per_family: Vec<BTreeMap<(u64, u64), String>> = Family::ALL
        .iter()
        .map(|f| {
            reg[f.name()]["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| {
                    ((x["hi"].as_u64().unwrap(), x["lo"].as_u64().unwrap()), x["name"].as_str().unwrap().to_owned())
                })
                .collect()
        })
        .collect();
    let shared: BTreeMap<(u64, u64), String> = per_family[0]
        .iter()
        .filter(|(bits, name)| per_family[1..].iter().all(|m| m.get(bits) == Some(name)))
        // Bit 12 is "RESERVED" on gfx10.3/gfx11 and PING_PONG_EN on gfx12, so it is not shared;
        // a field called RESERVED everywhere would not be a field either.
        .filter(|(_, name)| name.as_str() != "RESERVED")
        .map(|(b, n)| (*b, n.clone()))
        .collect();
    let ours: BTreeMap<(u64, u64), String> =
        DispatchInitiator::FIELDS.iter().map(|f| ((u64::from(f.hi), u64::from(f.lo)), f.name.to_owned())).collect();
    assert_eq!(ours, shared);
}
