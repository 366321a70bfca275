//! Checks every struct offset and size and every enum value against the `aql` section of the
//! reference table (`reference/amd-reference.json`). Names are mapped
//! explicitly; a JSON entry without a mapping fails the test.

use core::mem::{offset_of, size_of, size_of_val};
use std::collections::BTreeSet;

use aql_packets::vendor::{AMD_AQL_FORMAT_PM4_IB, HSA_AMD_PACKET_TYPE_BARRIER_VALUE, PM4_IB_DW_CNT_REMAIN};
use aql_packets::{
    AgentDispatchPacket, AmdBarrierValuePacket, AmdFormat, AmdPm4IbPacket, AmdVendorHeader, BarrierAndPacket,
    BarrierOrPacket, Dimensions, FenceScope, Header, KernelDispatchPacket, PACKET_SIZE, PacketType, SignalCondition,
    amd_queue,
};
use serde_json::Value;
use zerocopy::FromZeros;

fn aql() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../reference/amd-reference.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut json: Value = serde_json::from_str(&text).unwrap();
    json["aql"].take()
}

/// `(offset, size)` of a field of a zerocopy struct.
macro_rules! field {
    ($ty:ty, $f:ident) => {{
        let zero = <$ty as FromZeros>::new_zeroed();
        (offset_of!($ty, $f), size_of_val(&zero.$f))
    }};
}

fn as_usize(v: &Value) -> usize {
    usize::try_from(v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))).unwrap()
}

/// Checks `json["size"]` and that the JSON field list and `fields` name the same fields at the
/// same offsets with the same sizes.
fn check_struct(json: &Value, name: &str, size: usize, fields: &[(&str, (usize, usize))]) {
    assert_eq!(as_usize(&json["size"]), size, "{name} size");
    let listed = json["fields"].as_array().unwrap_or_else(|| panic!("{name}: no field list"));
    assert_eq!(listed.len(), fields.len(), "{name}: field count");
    let unique: BTreeSet<_> = fields.iter().map(|(n, _)| n).collect();
    assert_eq!(unique.len(), fields.len(), "{name}: duplicate mapping");
    for f in listed {
        let json_name = f["name"].as_str().unwrap();
        let Some((_, (offset, size))) = fields.iter().find(|(n, _)| *n == json_name) else {
            panic!("{name}: no mapping for JSON field {json_name:?}");
        };
        assert_eq!(as_usize(&f["offset"]), *offset, "{name}.{json_name} offset");
        assert_eq!(as_usize(&f["size"]), *size, "{name}.{json_name} size");
    }
}

/// `"[hi:lo]"` or `"[bit]"` → `(hi, lo)`.
fn bits(s: &str) -> (u8, u8) {
    let inner = s.strip_prefix('[').and_then(|s| s.strip_suffix(']')).unwrap();
    match inner.split_once(':') {
        Some((hi, lo)) => (hi.parse().unwrap(), lo.parse().unwrap()),
        None => (inner.parse().unwrap(), inner.parse().unwrap()),
    }
}

/// Checks a `{NAME: value, ..., "src": [...]}` table against explicit `(name, value)` pairs.
fn check_enum(json: &Value, name: &str, values: &[(&str, u64)]) {
    let table = json.as_object().unwrap_or_else(|| panic!("{name}: not an object"));
    let entries: Vec<_> = table.iter().filter(|(k, _)| k.as_str() != "src").collect();
    assert_eq!(entries.len(), values.len(), "{name}: entry count");
    for (key, value) in entries {
        let Some((_, expected)) = values.iter().find(|(n, _)| n == key) else {
            panic!("{name}: no mapping for {key:?}");
        };
        assert_eq!(value.as_u64(), Some(*expected), "{name}.{key}");
    }
}

#[test]
fn packet_size() {
    assert_eq!(as_usize(&aql()["packet_size_bytes"]), PACKET_SIZE);
}

#[test]
fn kernel_dispatch_layout() {
    type P = KernelDispatchPacket;
    check_struct(
        &aql()["hsa_kernel_dispatch_packet_t"],
        "hsa_kernel_dispatch_packet_t",
        size_of::<P>(),
        &[
            ("header", field!(P, header)),
            ("setup", field!(P, setup)),
            ("workgroup_size_x", field!(P, workgroup_size_x)),
            ("workgroup_size_y", field!(P, workgroup_size_y)),
            ("workgroup_size_z", field!(P, workgroup_size_z)),
            ("reserved0", field!(P, reserved0)),
            ("grid_size_x", field!(P, grid_size_x)),
            ("grid_size_y", field!(P, grid_size_y)),
            ("grid_size_z", field!(P, grid_size_z)),
            ("private_segment_size", field!(P, private_segment_size)),
            ("group_segment_size", field!(P, group_segment_size)),
            ("kernel_object", field!(P, kernel_object)),
            ("kernarg_address", field!(P, kernarg_address)),
            ("reserved2", field!(P, reserved2)),
            ("completion_signal", field!(P, completion_signal)),
        ],
    );
}

fn barrier_fields<const OR: bool>() -> [(&'static str, (usize, usize)); 6] {
    if OR {
        type P = BarrierOrPacket;
        [
            ("header", field!(P, header)),
            ("reserved0", field!(P, reserved0)),
            ("reserved1", field!(P, reserved1)),
            ("dep_signal[5]", field!(P, dep_signal)),
            ("reserved2", field!(P, reserved2)),
            ("completion_signal", field!(P, completion_signal)),
        ]
    } else {
        type P = BarrierAndPacket;
        [
            ("header", field!(P, header)),
            ("reserved0", field!(P, reserved0)),
            ("reserved1", field!(P, reserved1)),
            ("dep_signal[5]", field!(P, dep_signal)),
            ("reserved2", field!(P, reserved2)),
            ("completion_signal", field!(P, completion_signal)),
        ]
    }
}

#[test]
fn barrier_and_layout() {
    check_struct(
        &aql()["hsa_barrier_and_packet_t"],
        "hsa_barrier_and_packet_t",
        size_of::<BarrierAndPacket>(),
        &barrier_fields::<false>(),
    );
}

#[test]
fn barrier_or_layout() {
    let aql = aql();
    let or = &aql["hsa_barrier_or_packet_t"];
    assert_eq!(as_usize(&or["size"]), size_of::<BarrierOrPacket>());
    // The table states the OR layout as "identical to barrier-AND (..., name @offset, ...)".
    let layout = or["layout"].as_str().unwrap();
    assert!(layout.starts_with("identical to barrier-AND"), "{layout}");
    check_struct(&aql["hsa_barrier_and_packet_t"], "hsa_barrier_or_packet_t", 64, &barrier_fields::<true>());
    let inner = layout.split_once('(').unwrap().1.split_once(')').unwrap().0;
    let mut checked = 0;
    for item in inner.split(", ") {
        if let Some((name, offset)) = item.split_once(" @") {
            let (_, (expected, _)) = barrier_fields::<true>().into_iter().find(|(n, _)| *n == name).unwrap();
            assert_eq!(offset.parse::<usize>().unwrap(), expected, "barrier-OR {name}");
            checked += 1;
        }
    }
    assert_eq!(checked, 3, "{layout}");
}

#[test]
fn agent_dispatch_layout() {
    type P = AgentDispatchPacket;
    check_struct(
        &aql()["hsa_agent_dispatch_packet_t"],
        "hsa_agent_dispatch_packet_t",
        size_of::<P>(),
        &[
            ("header", field!(P, header)),
            ("type", field!(P, r#type)),
            ("reserved0", field!(P, reserved0)),
            ("return_address", field!(P, return_address)),
            ("arg[4]", field!(P, arg)),
            ("reserved2", field!(P, reserved2)),
            ("completion_signal", field!(P, completion_signal)),
        ],
    );
}

#[test]
fn vendor_header_layout_and_formats() {
    type P = AmdVendorHeader;
    let aql = aql();
    let json = &aql["amd_vendor_packet_header"];
    check_struct(
        json,
        "amd_vendor_packet_header",
        size_of::<P>(),
        &[("header", field!(P, header)), ("AmdFormat", field!(P, amd_format)), ("reserved", field!(P, reserved))],
    );
    let formats = [
        ("AMD_AQL_FORMAT_PM4_IB (ROCr-internal constant)", AmdFormat::Pm4Ib),
        ("HSA_AMD_PACKET_TYPE_BARRIER_VALUE", AmdFormat::BarrierValue),
        ("HSA_AMD_PACKET_TYPE_AIE_ERT (newer ROCr)", AmdFormat::AieErt),
    ];
    check_enum(&json["amd_formats"], "amd_formats", &formats.map(|(n, f)| (n, u64::from(f.to_u8()))));
    for (_, format) in formats {
        assert_eq!(AmdFormat::from_u8(format.to_u8()), format);
    }
    assert_eq!(AMD_AQL_FORMAT_PM4_IB, AmdFormat::Pm4Ib.to_u8());
    assert_eq!(HSA_AMD_PACKET_TYPE_BARRIER_VALUE, AmdFormat::BarrierValue.to_u8());
}

#[test]
fn barrier_value_layout() {
    type P = AmdBarrierValuePacket;
    check_struct(
        &aql()["hsa_amd_barrier_value_packet_t"],
        "hsa_amd_barrier_value_packet_t",
        size_of::<P>(),
        &[
            ("header", field!(P, header)),
            ("reserved0", field!(P, reserved0)),
            ("signal", field!(P, signal)),
            ("value", field!(P, value)),
            ("mask", field!(P, mask)),
            ("cond", field!(P, cond)),
            ("reserved1", field!(P, reserved1)),
            ("reserved2", field!(P, reserved2)),
            ("reserved3", field!(P, reserved3)),
            ("completion_signal", field!(P, completion_signal)),
        ],
    );
}

#[test]
fn pm4_ib_layout() {
    type P = AmdPm4IbPacket;
    let aql = aql();
    let json = &aql["amd_aql_pm4_ib_packet"];
    check_struct(
        json,
        "amd_aql_pm4_ib_packet",
        size_of::<P>(),
        &[
            ("header", field!(P, header)),
            ("ven_hdr", field!(P, ven_hdr)),
            ("ib_jump_cmd[4]", field!(P, ib_jump_cmd)),
            ("dw_cnt_remain", field!(P, dw_cnt_remain)),
            ("reserved[8]", field!(P, reserved)),
            ("completion_signal", field!(P, completion_signal)),
        ],
    );
    let desc = |name: &str| {
        json["fields"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap()["desc"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // "ROCr writes 0xA (= dwords after this field ...)".
    assert!(desc("dw_cnt_remain").contains(&format!("{PM4_IB_DW_CNT_REMAIN:#X} ")), "{}", desc("dw_cnt_remain"));
    assert_eq!(
        (size_of::<P>() - offset_of!(P, dw_cnt_remain) - size_of::<u32>()) / 4,
        usize::try_from(PM4_IB_DW_CNT_REMAIN).unwrap()
    );
    // "= AMD_AQL_FORMAT_PM4_IB = 0x1".
    assert!(desc("ven_hdr").contains(&format!("= {AMD_AQL_FORMAT_PM4_IB:#x} ")), "{}", desc("ven_hdr"));
}

#[test]
fn header_bits() {
    let aql = aql();
    let json = &aql["header"];
    assert_eq!(json["width_bits"].as_u64(), Some(16));
    let listed = json["fields"].as_array().unwrap();
    assert_eq!(listed.len(), Header::FIELDS.len());
    for (f, ours) in listed.iter().zip(Header::FIELDS) {
        assert_eq!(f["name"].as_str(), Some(ours.name));
        assert_eq!(bits(f["bits"].as_str().unwrap()), (ours.hi, ours.lo), "{}", ours.name);
    }
    let field = |name: &str| Header::FIELDS.into_iter().find(|f| f.name == name).unwrap();
    let width = |name: &str| u64::from(field(name).hi - field(name).lo + 1);
    let lo = |name: &str| u64::from(field(name).lo);
    check_enum(
        &json["constants"],
        "header constants",
        &[
            ("HSA_PACKET_HEADER_TYPE", lo("TYPE")),
            ("HSA_PACKET_HEADER_BARRIER", lo("BARRIER")),
            ("HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE", lo("SCACQUIRE_FENCE_SCOPE")),
            ("HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE", lo("SCRELEASE_FENCE_SCOPE")),
            ("HSA_PACKET_HEADER_WIDTH_TYPE", width("TYPE")),
            ("HSA_PACKET_HEADER_WIDTH_BARRIER", width("BARRIER")),
            ("HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE", width("SCACQUIRE_FENCE_SCOPE")),
            ("HSA_PACKET_HEADER_WIDTH_SCRELEASE_FENCE_SCOPE", width("SCRELEASE_FENCE_SCOPE")),
        ],
    );
}

#[test]
fn setup_bits() {
    let aql = aql();
    let listed = aql["kernel_dispatch_setup"]["fields"].as_array().unwrap();
    assert_eq!(listed.len(), Dimensions::FIELDS.len());
    for (f, ours) in listed.iter().zip(Dimensions::FIELDS) {
        assert_eq!(f["name"].as_str(), Some(ours.name));
        assert_eq!(bits(f["bits"].as_str().unwrap()), (ours.hi, ours.lo), "{}", ours.name);
    }
    // "number of grid dimensions 1..3".
    assert!(listed[0]["desc"].as_str().unwrap().contains("1..3"));
    for d in [Dimensions::One, Dimensions::Two, Dimensions::Three] {
        assert_eq!(Dimensions::from_setup(d.to_setup()), Ok(d));
    }
}

#[test]
fn packet_types() {
    let values = PacketType::ALL.map(|t| (t.name(), u64::from(t.to_u8())));
    check_enum(&aql()["packet_types"], "packet_types", &values);
    for t in PacketType::ALL {
        assert_eq!(PacketType::from_u8(t.to_u8()), Some(t));
    }
}

#[test]
fn fence_scopes() {
    let values = FenceScope::ALL.map(|s| (s.name(), u64::from(s.to_u8())));
    check_enum(&aql()["fence_scopes"], "fence_scopes", &values);
    assert_eq!(FenceScope::from_u8(3), None);
}

#[test]
fn signal_conditions() {
    let values = SignalCondition::ALL.map(|c| (c.name(), u64::from(c.to_u32())));
    check_enum(&aql()["signal_conditions"], "signal_conditions", &values);
}

#[test]
fn amd_queue_offsets() {
    let aql = aql();
    let json = &aql["amd_queue_t"];
    assert_eq!(as_usize(&json["size"]), amd_queue::SIZE);
    assert_eq!(as_usize(&json["alignment"]), amd_queue::ALIGN);
    let fields = json["fields"].as_array().unwrap();
    let offset = |name: &str| as_usize(&fields.iter().find(|f| f["name"] == name).unwrap()["offset"]);
    assert_eq!(offset("write_dispatch_id"), amd_queue::WRITE_DISPATCH_ID);
    assert_eq!(offset("read_dispatch_id"), amd_queue::READ_DISPATCH_ID);
    assert_eq!(offset("queue_inactive_signal"), amd_queue::QUEUE_INACTIVE_SIGNAL);
    // The embedded hsa_queue_t is described as "name@offset(type), ...".
    let hsa_queue = fields.iter().find(|f| f["name"] == "hsa_queue (hsa_queue_t)").unwrap();
    assert_eq!(as_usize(&hsa_queue["offset"]), 0);
    let desc = hsa_queue["desc"].as_str().unwrap();
    let sub = |name: &str| -> usize {
        let item = desc.split(", ").find(|i| i.starts_with(&format!("{name}@"))).unwrap();
        item[name.len() + 1..].split('(').next().unwrap().parse().unwrap()
    };
    assert_eq!(sub("base_address"), amd_queue::HSA_QUEUE_BASE_ADDRESS);
    assert_eq!(sub("doorbell_signal"), amd_queue::HSA_QUEUE_DOORBELL_SIGNAL);
    assert_eq!(sub("size"), amd_queue::HSA_QUEUE_SIZE);
    assert_eq!(sub("id"), amd_queue::HSA_QUEUE_ID);
}
