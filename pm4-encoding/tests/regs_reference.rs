//! The per-family register maps against the machine-readable reference table
//! (`reference/amd-reference.json`, the twin of `reference/amd-reference.md` §2 and §3).
//!
//! Every expected offset, name and field comes from the JSON; nothing here is copied from the
//! code under test.

use std::collections::{BTreeMap, BTreeSet};

use pm4_encoding::Family;
use pm4_encoding::bits::FieldDesc;
use pm4_encoding::regs::{self, RegisterInfo, SH_REG_BASE};
use serde_json::Value;

/// Number of register rows per family in reference §2.
const REFERENCE_ROWS: usize = 74;

/// The JSON field-table entry that covers several registers, and the registers it covers.
/// Reference §3 "COMPUTE_STATIC_THREAD_MGMT_SE0..SE3" describes SE0, SE1, SE2 and SE3 with one
/// table (key `all`, same on every family); the JSON keeps that grouping as a single key.
const SE0_TO_SE3_KEY: &str = "COMPUTE_STATIC_THREAD_MGMT_SE0..SE3";
const SE0_TO_SE3: [&str; 4] = [
    "COMPUTE_STATIC_THREAD_MGMT_SE0",
    "COMPUTE_STATIC_THREAD_MGMT_SE1",
    "COMPUTE_STATIC_THREAD_MGMT_SE2",
    "COMPUTE_STATIC_THREAD_MGMT_SE3",
];

/// A field as `(lo, hi, name)`, so that sorting orders by `lo`.
type Field = (u8, u8, String);

fn reference() -> Value {
    serde_json::from_str(include_str!("../../reference/amd-reference.json")).expect("reference JSON parses")
}

fn hex(v: &Value) -> u32 {
    let s = v.as_str().expect("hex string");
    u32::from_str_radix(s.strip_prefix("0x").expect("0x prefix"), 16).expect("hex value")
}

/// Reference §2 rows of `family`: `(name, present, dword, sh_rel)`.
fn rows(reference: &Value, family: Family) -> Vec<(String, bool, Option<u32>, Option<u32>)> {
    let rows = reference["registers"][family.name()].as_array().expect("register rows");
    assert_eq!(rows.len(), REFERENCE_ROWS, "{family}: reference row count");
    rows.iter()
        .map(|r| {
            let present = r["present"].as_bool().expect("present");
            let name = r["name"].as_str().expect("name").to_owned();
            (name, present, present.then(|| hex(&r["dword"])), present.then(|| hex(&r["sh_rel"])))
        })
        .collect()
}

/// Every dword any family's row of `name` has (used to probe families where it is absent).
fn dwords_anywhere(reference: &Value, name: &str) -> BTreeSet<u32> {
    Family::ALL
        .into_iter()
        .flat_map(|f| rows(reference, f))
        .filter(|(n, present, ..)| n == name && *present)
        .filter_map(|(_, _, dword, _)| dword)
        .collect()
}

fn parse_bits(bits: &str) -> (u8, u8) {
    let inner = bits.strip_prefix('[').and_then(|b| b.strip_suffix(']')).expect("[hi:lo]");
    match inner.split_once(':') {
        Some((hi, lo)) => (hi.parse().expect("hi"), lo.parse().expect("lo")),
        None => {
            let bit = inner.parse().expect("bit");
            (bit, bit)
        }
    }
}

/// A JSON field list as sorted `(lo, hi, name)`, checking `hi`/`lo` against `bits` when present.
fn json_fields(fields: &Value) -> Vec<Field> {
    let mut out: Vec<Field> = fields
        .as_array()
        .expect("field list")
        .iter()
        .map(|f| {
            let (hi, lo) = parse_bits(f["bits"].as_str().expect("bits"));
            if let (Some(h), Some(l)) = (f["hi"].as_u64(), f["lo"].as_u64()) {
                assert_eq!((u64::from(hi), u64::from(lo)), (h, l), "bits string vs hi/lo in {f}");
            }
            (lo, hi, f["name"].as_str().expect("field name").to_owned())
        })
        .collect();
    out.sort();
    out
}

fn code_fields(fields: &[FieldDesc]) -> Vec<Field> {
    let mut out: Vec<Field> = fields.iter().map(|f| (f.lo, f.hi, f.name.to_owned())).collect();
    out.sort();
    out
}

/// Field tables the reference gives for `family`: register name -> sorted fields. Registers the
/// reference lists as absent on `family` map to `None`.
fn reference_field_tables(reference: &Value, family: Family) -> BTreeMap<String, Option<Vec<Field>>> {
    let mut out = BTreeMap::new();
    for (key, entry) in reference["register_fields"].as_object().expect("register_fields") {
        if key == SE0_TO_SE3_KEY {
            let fields = json_fields(&entry["all"]["fields"]);
            for name in SE0_TO_SE3 {
                out.insert(name.to_owned(), Some(fields.clone()));
            }
            continue;
        }
        let per_family = &entry[family.name()];
        let present = per_family["present"].as_bool().unwrap_or_else(|| panic!("{key}/{family}: present"));
        out.insert(key.clone(), present.then(|| json_fields(&per_family["fields"])));
    }
    out
}

#[test]
fn every_reference_register_is_mapped_at_its_dword() {
    let reference = reference();
    for family in Family::ALL {
        for (name, present, dword, sh_rel) in rows(&reference, family) {
            let by_name = regs::by_name(family, &name);
            if present {
                let (dword, sh_rel) = (dword.expect("dword"), sh_rel.expect("sh_rel"));
                let info = by_name.unwrap_or_else(|| panic!("{family}: {name} missing"));
                assert_eq!(info.dword, dword, "{family}: {name} dword");
                assert_eq!(
                    regs::lookup(family, dword).map(|r| r.name),
                    Some(name.as_str()),
                    "{family}: lookup({dword:#x})"
                );
                assert_eq!(info.sh_offset().map(u32::from), Some(sh_rel), "{family}: {name} SH offset");
                assert_eq!(dword - SH_REG_BASE, sh_rel, "{family}: {name}: reference dword and sh_rel disagree");
            } else {
                assert_eq!(by_name, None, "{family}: {name} is absent in the reference");
                let probes = dwords_anywhere(&reference, &name);
                assert!(!probes.is_empty(), "{name} present on no family");
                for d in probes {
                    assert_ne!(
                        regs::lookup(family, d).map(|r| r.name),
                        Some(name.as_str()),
                        "{family}: {d:#x} aliased"
                    );
                }
            }
        }
    }
}

#[test]
fn family_tables_hold_only_reference_registers() {
    let reference = reference();
    for family in Family::ALL {
        let present: BTreeMap<String, u32> = rows(&reference, family)
            .into_iter()
            .filter_map(|(name, present, dword, _)| present.then(|| (name, dword.expect("dword"))))
            .collect();
        let table = regs::registers(family);
        assert_eq!(table.len(), present.len(), "{family}: register count");
        for r in table {
            assert_eq!(
                present.get(r.name),
                Some(&r.dword),
                "{family}: {} at {:#x} not in the reference",
                r.name,
                r.dword
            );
        }
    }
}

#[test]
fn tables_are_sorted_without_duplicates() {
    for family in Family::ALL {
        let table = regs::registers(family);
        for pair in table.windows(2) {
            assert!(pair[0].dword < pair[1].dword, "{family}: {} then {}", pair[0].name, pair[1].name);
        }
        let names: BTreeSet<&str> = table.iter().map(|r| r.name).collect();
        assert_eq!(names.len(), table.len(), "{family}: duplicate names");
    }
}

#[test]
fn field_tables_match_reference() {
    let reference = reference();
    for family in Family::ALL {
        for (name, fields) in reference_field_tables(&reference, family) {
            let info = regs::by_name(family, &name);
            match fields {
                Some(expected) => {
                    let info = info.unwrap_or_else(|| panic!("{family}: {name} missing"));
                    assert_eq!(code_fields(info.fields), expected, "{family}: {name} fields");
                }
                None => assert_eq!(info, None, "{family}: {name} is absent in the reference"),
            }
        }
    }
}

#[test]
fn registers_without_reference_fields_are_whole_words() {
    let reference = reference();
    for family in Family::ALL {
        let tables = reference_field_tables(&reference, family);
        for r in regs::registers(family) {
            if !tables.contains_key(r.name) {
                assert!(r.fields.is_empty(), "{family}: {} has fields the reference does not give", r.name);
            }
        }
    }
}

#[test]
fn fields_do_not_overlap() {
    for family in Family::ALL {
        for r in regs::registers(family) {
            let mut seen = 0u32;
            for f in r.fields {
                assert_eq!(seen & f.mask(), 0, "{family}: {}.{} overlaps", r.name, f.name);
                seen |= f.mask();
            }
        }
    }
}

/// Named values of a field as the reference lists them on `family`.
fn reference_enum(reference: &Value, register: &str, field: &str, family: Family) -> BTreeMap<String, u64> {
    let fields = reference["register_fields"][register][family.name()]["fields"].as_array().expect("fields");
    let f = fields.iter().find(|f| f["name"] == field).unwrap_or_else(|| panic!("{register}.{field}"));
    f["enum"].as_object().expect("enum").iter().map(|(k, v)| (k.clone(), v.as_u64().expect("value"))).collect()
}

#[test]
fn named_values_match_reference() {
    let reference = reference();
    let float_mode: BTreeMap<String, u64> =
        regs::gfx11::FloatMode::NAMED.iter().map(|(n, v)| ((*n).to_owned(), u64::from(v.raw()))).collect();
    let exceptions: BTreeMap<String, u64> =
        regs::gfx11::ExceptionMask::NAMED.iter().map(|(n, v)| ((*n).to_owned(), u64::from(v.bits()))).collect();
    for family in Family::ALL {
        assert_eq!(reference_enum(&reference, "COMPUTE_PGM_RSRC1", "FLOAT_MODE", family), float_mode, "{family}");
        assert_eq!(reference_enum(&reference, "COMPUTE_PGM_RSRC2", "EXCP_EN", family), exceptions, "{family}");
    }
}

#[test]
fn typed_words_are_the_tables_of_their_registers() {
    // The family's typed word and its map entry must describe the same field table.
    fn same(info: &RegisterInfo, fields: &[FieldDesc]) {
        assert_eq!(code_fields(info.fields), code_fields(fields), "{}", info.name);
    }
    same(&regs::gfx10_3::COMPUTE_PGM_RSRC2, regs::gfx10_3::ComputePgmRsrc2::FIELDS);
    same(&regs::gfx11::COMPUTE_PGM_RSRC2, regs::gfx11::ComputePgmRsrc2::FIELDS);
    same(&regs::gfx12::COMPUTE_PGM_RSRC2, regs::gfx12::ComputePgmRsrc2::FIELDS);
    same(&regs::gfx12::COMPUTE_NUM_THREAD_X, regs::gfx12::ComputeNumThreadX::FIELDS);
    same(&regs::gfx11::COMPUTE_STATIC_THREAD_MGMT_SE2, regs::gfx11::ComputeStaticThreadMgmtSe0To3::FIELDS);
}
