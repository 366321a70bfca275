//! A code object as people read it (`redline inspect`): the target and its features, the
//! code-object version, and for each kernel its metadata, descriptor fields (decoded with the
//! family's field names), user-SGPR layout, kernarg layout and retained-replay verdict, as one
//! JSON document or as text rendered from it.

use alloc::borrow::ToOwned as _;
use alloc::format;
use alloc::string::{String, ToString as _};
use alloc::vec::Vec;
use core::fmt::Write as _;

use pm4_encoding::bits::FieldDesc;
use pm4_encoding::{Family, Target};
use serde_json::{Map, Value, json};

use crate::{CodeObject, Kernel, TargetFeature, UserSgprLayout, verdict};

fn feature(f: TargetFeature) -> &'static str {
    match f {
        TargetFeature::Unsupported => "unsupported",
        TargetFeature::Any => "any",
        TargetFeature::Off => "off",
        TargetFeature::On => "on",
    }
}

/// The whole report as JSON (the text form is rendered from it).
#[must_use]
pub fn document(co: &CodeObject) -> Value {
    let family = co.target.target.map(Target::family);
    json!({
        "target": co.target.name,
        "target_id": co.target.to_target_id(),
        "supported_target": co.target.target.is_some(),
        "family": family.map(Family::name),
        "xnack": feature(co.target.xnack),
        "sramecc": feature(co.target.sramecc),
        "code_object_version": co.version.number(),
        "metadata_version": co.metadata_version,
        "metadata_target": co.metadata_target,
        "kernels": co.kernels.iter().map(|k| kernel(co, k, family)).collect::<Vec<_>>(),
    })
}

fn fields(raw: u32, table: &[FieldDesc]) -> Value {
    Value::Object(table.iter().map(|f| (f.name.to_owned(), json!(f.get(raw)))).collect())
}

fn kernel(co: &CodeObject, k: &Kernel, family: Option<Family>) -> Value {
    let m = &k.metadata;
    let d = &k.descriptor;
    let kcp = d.kernel_code_properties();
    let mut descriptor = json!({
        "address": k.descriptor_address,
        "entry_address": k.entry_address,
        "group_segment_fixed_size": d.group_segment_fixed_size(),
        "private_segment_fixed_size": d.private_segment_fixed_size(),
        "kernarg_size": d.kernarg_size(),
        "kernel_code_entry_byte_offset": d.kernel_code_entry_byte_offset(),
        "compute_pgm_rsrc1": d.compute_pgm_rsrc1(),
        "compute_pgm_rsrc2": d.compute_pgm_rsrc2(),
        "compute_pgm_rsrc3": d.compute_pgm_rsrc3(),
        "kernel_code_properties": kcp.raw(),
        "kernel_code_properties_fields": fields(kcp.raw(), crate::descriptor::KernelCodeProperties::FIELDS),
        "kernarg_preload": d.kernarg_preload().raw(),
    });
    let mut user_sgprs = Value::Null;
    if let Some(family) = family {
        let compute = &family.facts().compute;
        if let Some(obj) = descriptor.as_object_mut() {
            for (key, reg, raw) in [
                ("compute_pgm_rsrc1_fields", compute.pgm_rsrc1, d.compute_pgm_rsrc1()),
                ("compute_pgm_rsrc2_fields", compute.pgm_rsrc2, d.compute_pgm_rsrc2()),
                ("compute_pgm_rsrc3_fields", compute.pgm_rsrc3, d.compute_pgm_rsrc3()),
            ] {
                obj.insert(key.to_owned(), fields(raw, reg.fields));
            }
        }
        let layout = UserSgprLayout::new(d, family);
        user_sgprs = json!({
            "total": layout.total(),
            "rsrc2_user_sgpr": d.rsrc2(family).user_sgpr(),
            "blocks": layout.blocks().iter().map(|b| json!({"name": b.kind.name(), "first": b.first, "count": b.count})).collect::<Vec<_>>(),
        });
    }
    let v = verdict(k, &co.target);
    let layout = match k.kernarg_layout() {
        Ok(l) => json!({
            "segment_size": l.segment_size(),
            "segment_align": l.segment_align(),
            "args": l.args().iter().map(|a| json!({"index": a.index, "name": a.name, "value_kind": a.kind.as_str(), "offset": a.offset, "size": a.size})).collect::<Vec<_>>(),
        }),
        Err(e) => json!({ "error": e.to_string() }),
    };
    let mut obj = Map::new();
    for (key, value) in [
        ("name", json!(m.name)),
        ("symbol", json!(m.symbol)),
        ("kernarg_segment_size", json!(m.kernarg_segment_size)),
        ("kernarg_segment_align", json!(m.kernarg_segment_align)),
        ("group_segment_fixed_size", json!(m.group_segment_fixed_size)),
        ("private_segment_fixed_size", json!(m.private_segment_fixed_size)),
        ("wavefront_size", json!(m.wavefront_size)),
        ("sgpr_count", json!(m.sgpr_count)),
        ("vgpr_count", json!(m.vgpr_count)),
        ("max_flat_workgroup_size", json!(m.max_flat_workgroup_size)),
        ("uses_dynamic_stack", json!(m.uses_dynamic_stack)),
        ("args", Value::Array(m.args.iter().map(arg).collect())),
        ("descriptor", descriptor),
        ("user_sgprs", user_sgprs),
        ("kernarg_layout", layout),
        (
            "retained_replay",
            json!({
                "supported": v.supported,
                "reasons": v.reasons.iter().map(|r| json!({"code": r.code(), "message": r.to_string()})).collect::<Vec<_>>(),
            }),
        ),
    ] {
        obj.insert(key.to_owned(), value);
    }
    Value::Object(obj)
}

fn arg(a: &crate::metadata::ArgMetadata) -> Value {
    json!({
        "offset": a.offset,
        "size": a.size,
        "value_kind": a.value_kind.as_str(),
        "name": a.name,
        "type_name": a.type_name,
        "address_space": a.address_space.as_ref().map(|s| s.as_str()),
        "access": a.access.as_ref().map(|s| s.as_str()),
        "actual_access": a.actual_access.as_ref().map(|s| s.as_str()),
    })
}

/// The text report, rendered from [`document`]'s JSON.
#[must_use]
pub fn text(doc: &Value) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "target {} ({}), family {}, code object v{}, xnack {}, sramecc {}",
        doc["target"].as_str().unwrap_or("?"),
        doc["target_id"].as_str().unwrap_or("?"),
        doc["family"].as_str().unwrap_or("unsupported"),
        doc["code_object_version"],
        doc["xnack"].as_str().unwrap_or("?"),
        doc["sramecc"].as_str().unwrap_or("?"),
    );
    for k in doc["kernels"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "\nkernel {} (symbol {})",
            k["name"].as_str().unwrap_or("?"),
            k["symbol"].as_str().unwrap_or("?")
        );
        let _ = writeln!(
            s,
            "  kernarg {} bytes, align {}; LDS {} bytes; scratch {} bytes/lane; wave{}; {} SGPRs, {} VGPRs; max workgroup {}{}",
            k["kernarg_segment_size"],
            k["kernarg_segment_align"],
            k["group_segment_fixed_size"],
            k["private_segment_fixed_size"],
            k["wavefront_size"],
            k["sgpr_count"],
            k["vgpr_count"],
            k["max_flat_workgroup_size"],
            if k["uses_dynamic_stack"] == true { "; dynamic stack" } else { "" },
        );
        let d = &k["descriptor"];
        let _ = writeln!(
            s,
            "  descriptor at {:#x}, entry {:#x} (offset {})",
            d["address"].as_u64().unwrap_or(0),
            d["entry_address"].as_u64().unwrap_or(0),
            d["kernel_code_entry_byte_offset"]
        );
        for (label, key) in [
            ("COMPUTE_PGM_RSRC1", "compute_pgm_rsrc1"),
            ("COMPUTE_PGM_RSRC2", "compute_pgm_rsrc2"),
            ("COMPUTE_PGM_RSRC3", "compute_pgm_rsrc3"),
            ("kernel_code_properties", "kernel_code_properties"),
        ] {
            let _ = write!(s, "    {label} = {:#010x}", d[key].as_u64().unwrap_or(0));
            if let Some(f) = d[format!("{key}_fields").as_str()].as_object() {
                let set: Vec<String> =
                    f.iter().filter(|(_, v)| v.as_u64() != Some(0)).map(|(n, v)| format!("{n}={v}")).collect();
                let _ = write!(s, "  [{}]", set.join(" "));
            }
            s.push('\n');
        }
        if let Some(blocks) = k["user_sgprs"]["blocks"].as_array() {
            let list: Vec<String> = blocks
                .iter()
                .map(|b| {
                    format!(
                        "s{}..s{} {}",
                        b["first"],
                        b["first"].as_u64().unwrap_or(0) + b["count"].as_u64().unwrap_or(1) - 1,
                        b["name"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            let _ = writeln!(
                s,
                "  user SGPRs ({} used, RSRC2.USER_SGPR {}): {}",
                k["user_sgprs"]["total"],
                k["user_sgprs"]["rsrc2_user_sgpr"],
                list.join(", ")
            );
        }
        let _ = writeln!(s, "  arguments:");
        for a in k["args"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "    @{:<4} {:>2} bytes  {:<26} {}",
                a["offset"].as_u64().unwrap_or(0),
                a["size"].as_u64().unwrap_or(0),
                a["value_kind"].as_str().unwrap_or("?"),
                [a["name"].as_str(), a["type_name"].as_str(), a["address_space"].as_str()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
        let r = &k["retained_replay"];
        if r["supported"] == true {
            let _ = writeln!(s, "  retained replay: supported");
        } else {
            let _ = writeln!(s, "  retained replay: NOT supported");
            for reason in r["reasons"].as_array().into_iter().flatten() {
                let _ = writeln!(
                    s,
                    "    - {} ({})",
                    reason["message"].as_str().unwrap_or("?"),
                    reason["code"].as_str().unwrap_or("?")
                );
            }
        }
    }
    s
}
