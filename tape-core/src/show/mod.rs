//! A stored tape as people read it (`redline tape show`): loaded from either form with every
//! error located, and reported as one JSON document or as text rendered from it.

mod locate;

use alloc::format;
use alloc::string::{String, ToString as _};
use alloc::vec::Vec;
use core::fmt::Write as _;

use serde_json::{Value, json};

use crate::binding::BindingKind;
use crate::deps::{self, DepsError};
use crate::serial::{HexBytes, SerialError, TAPE_MAGIC, TapeData, validate};
use crate::tape::{Tape, TapeError};
use crate::{Effects, LaunchRecord};

/// Why bytes are not a valid tape.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A binary tape (`RLTAPE` magic) that does not decode or validate.
    #[error("invalid binary tape: {0}")]
    Binary(SerialError),
    /// JSON that does not parse as a tape: the message names the line, column and JSON path.
    #[error("{0}")]
    Json(String),
    /// A JSON tape that parses but breaks a rule.
    #[error("invalid JSON tape: {0}")]
    Invalid(TapeError),
}

/// Loads a binary (`RLTAPE` magic) or JSON tape, validated.
///
/// # Errors
/// [`LoadError`], naming what is wrong and where: the field path and byte offset of a binary decode
/// error, the line, column and JSON path of a JSON one, the launch and field of a value that
/// fails validation.
pub fn load(bytes: &[u8]) -> Result<Tape, LoadError> {
    if bytes.starts_with(&TAPE_MAGIC) {
        return Tape::from_binary(bytes).map_err(LoadError::Binary);
    }
    let data = serde_json::from_slice::<TapeData>(bytes).map_err(|e| LoadError::Json(locate::json_error(bytes, &e)))?;
    validate(data).map_err(LoadError::Invalid)
}

fn effects(e: &Effects) -> Value {
    match e {
        Effects::Unknown => json!("unknown"),
        Effects::Known(list) => Value::Array(
            list.iter()
                .map(|e| json!({"allocation": e.allocation.0, "offset_bytes": e.offset_bytes, "len_bytes": e.len_bytes, "access": format!("{:?}", e.access)}))
                .collect(),
        ),
    }
}

fn launch(i: usize, l: &LaunchRecord) -> Value {
    json!({
        "index": i,
        "symbol": l.artifact.symbol,
        "code_object_sha256": HexBytes(&l.artifact.code_object_sha256).to_string(),
        "grid_work_items": l.geometry.grid_work_items,
        "grid_workgroups": l.geometry.grid_workgroups(),
        "workgroup_work_items": l.geometry.workgroup_work_items,
        "lds_static_bytes": l.lds.static_bytes,
        "lds_dynamic_bytes": l.lds.dynamic_bytes,
        "wave_size": l.wave_size,
        "kernarg_bytes": l.kernarg.len(),
        "pointers": l.pointers.iter().map(|p| json!({"kernarg_offset": p.kernarg_offset, "allocation": p.allocation.0, "offset_bytes": p.offset_bytes})).collect::<Vec<_>>(),
        "effects": effects(&l.effects),
    })
}

/// A binding's kind as the report shows it.
#[must_use]
pub fn binding_kind(k: &BindingKind) -> Value {
    match *k {
        BindingKind::KernargU32 { offset, addend } => {
            json!({"kind": "kernarg_u32", "offset": offset, "addend": addend})
        }
        BindingKind::GridAxis { axis, addend, divisor, max_workgroups } => {
            json!({"kind": "grid_axis", "axis": axis, "addend": addend, "divisor": divisor, "max_workgroups": max_workgroups})
        }
        BindingKind::KernargGridWorkgroups { offset, axis, addend, divisor, max_workgroups } => {
            json!({"kind": "kernarg_grid_workgroups", "offset": offset, "axis": axis, "addend": addend, "divisor": divisor, "max_workgroups": max_workgroups})
        }
        BindingKind::KernargU32Clamped { offset, addend } => {
            json!({"kind": "kernarg_u32_clamped", "offset": offset, "addend": addend})
        }
    }
}

/// The report as JSON (the text form is rendered from it).
///
/// # Errors
/// When the tape is beyond the dependency derivation's limits.
pub fn document(tape: &Tape) -> Result<Value, DepsError> {
    let id = tape.identity();
    let launches = tape.launches();
    let boundaries = deps::boundaries(launches)?;
    let dag = deps::dependencies(launches)?;
    let edges: Vec<Value> = dag
        .pairs()
        .filter_map(|(j, i)| {
            let edge = dag.edge(j, i)?;
            let hazards: Vec<String> = edge.conflict.hazards().map(|h| format!("{h:?}")).collect();
            Some(json!({"earlier": j, "later": i, "hazards": hazards}))
        })
        .collect();
    Ok(json!({
        "identity": {
            "dispatch_count": id.dispatch_count,
            "unique_kernels": id.unique_kernels,
            "external_launches": id.external_launches,
            "compute_launches": id.compute_launches(),
            "sequence_hash": HexBytes(&id.sequence_hash).to_string(),
        },
        "position": tape.position(),
        "launches": launches.iter().enumerate().map(|(i, l)| launch(i, l)).collect::<Vec<_>>(),
        "boundaries": boundaries,
        "dependencies": edges,
        "bindings": tape.bindings().iter().map(|b| {
            let mut v = binding_kind(&b.kind);
            v["name"] = json!(b.name);
            v["launch"] = json!(b.launch);
            v
        }).collect::<Vec<_>>(),
        "external": tape.external().iter().map(|e| json!({"name": e.name, "count": e.count})).collect::<Vec<_>>(),
    }))
}

/// The text report, rendered from [`document`]'s JSON.
#[must_use]
pub fn text(doc: &Value) -> String {
    let mut s = String::new();
    let id = &doc["identity"];
    let _ = writeln!(
        s,
        "tape recorded at position {}: {} dispatches, {} unique kernels, {} external launches ({} compute launches)\nsequence hash {}",
        doc["position"],
        id["dispatch_count"],
        id["unique_kernels"],
        id["external_launches"],
        id["compute_launches"],
        id["sequence_hash"].as_str().unwrap_or("?")
    );
    let boundaries: Vec<u64> = doc["boundaries"].as_array().into_iter().flatten().filter_map(Value::as_u64).collect();
    let _ = writeln!(s, "\nlaunches (a wait precedes those marked |):");
    for l in doc["launches"].as_array().into_iter().flatten() {
        let i = l["index"].as_u64().unwrap_or(0);
        let mark = if boundaries.contains(&i) { "|" } else { " " };
        let sha = l["code_object_sha256"].as_str().unwrap_or("");
        let _ = writeln!(
            s,
            "{mark} #{i:<4} {} (code object {}…) grid {} work-items = {} work-groups of {}, LDS {}+{} bytes, wave{}, kernarg {} bytes",
            l["symbol"].as_str().unwrap_or("?"),
            &sha[..sha.len().min(12)],
            l["grid_work_items"],
            l["grid_workgroups"],
            l["workgroup_work_items"],
            l["lds_static_bytes"],
            l["lds_dynamic_bytes"],
            l["wave_size"],
            l["kernarg_bytes"],
        );
        for p in l["pointers"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "         pointer @kernarg+{} -> allocation {} + {}",
                p["kernarg_offset"], p["allocation"], p["offset_bytes"]
            );
        }
        match &l["effects"] {
            Value::String(u) => {
                let _ = writeln!(s, "         effects {u}: ordered against everything");
            }
            list => {
                for e in list.as_array().into_iter().flatten() {
                    let off = e["offset_bytes"].as_u64().unwrap_or(0);
                    let _ = writeln!(
                        s,
                        "         {:<9} allocation {} bytes {}..{}",
                        e["access"].as_str().unwrap_or("?"),
                        e["allocation"],
                        off,
                        off + e["len_bytes"].as_u64().unwrap_or(0)
                    );
                }
            }
        }
    }
    let _ = writeln!(s, "\nboundaries (wait before launch): {boundaries:?}");
    let _ = writeln!(s, "dependencies:");
    for e in doc["dependencies"].as_array().into_iter().flatten() {
        let hz: Vec<&str> = e["hazards"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let _ = writeln!(s, "  #{} waits for #{} ({})", e["later"], e["earlier"], hz.join(", "));
    }
    let _ = writeln!(s, "bindings:");
    for b in doc["bindings"].as_array().into_iter().flatten() {
        let what = match b["kind"].as_str() {
            Some("kernarg_u32") => format!("kernarg u32 @{} = position + {}", b["offset"], b["addend"]),
            Some("kernarg_grid_workgroups") => format!(
                "kernarg u32 @{} = grid axis {} = ceil((position + {}) / {}) work-groups, at most {}",
                b["offset"], b["axis"], b["addend"], b["divisor"], b["max_workgroups"]
            ),
            _ => format!(
                "grid axis {} = ceil((position + {}) / {}) work-groups, at most {}",
                b["axis"], b["addend"], b["divisor"], b["max_workgroups"]
            ),
        };
        let _ = writeln!(s, "  {} (launch #{}): {what}", b["name"].as_str().unwrap_or("?"), b["launch"]);
    }
    let _ = writeln!(s, "external launches:");
    for e in doc["external"].as_array().into_iter().flatten() {
        let _ = writeln!(s, "  {} x{}", e["name"].as_str().unwrap_or("?"), e["count"]);
    }
    s
}
