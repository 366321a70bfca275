//! The retained arm's captured tape as the report shows it: the artifacts (code objects) owning
//! its kernels, a geometry summary covering every launch, an effects summary, the calibrated
//! bindings and the named external launches.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tape_core::serial::HexBytes;
use tape_core::tape::Tape;
use tape_core::{Access, Effects, LaunchRecord};

use super::facts::{known, unknown};

/// The artifacts owning the tape's kernels: per code object, its checked-in path (when it is one
/// of `kernels`' embedded objects) and each kernel's launch count.
fn artifacts(launches: &[LaunchRecord]) -> Value {
    let mut objects: BTreeMap<String, BTreeMap<&str, u32>> = BTreeMap::new();
    for launch in launches {
        let sha = HexBytes(&launch.artifact.code_object_sha256).to_string();
        *objects.entry(sha).or_default().entry(launch.artifact.symbol.as_str()).or_default() += 1;
    }
    let rows: Vec<Value> = objects
        .iter()
        .map(|(sha, kernels)| {
            let path = kernels::artifacts().iter().find(|a| a.sha256 == sha).map(|a| a.path);
            json!({
                "code_object_sha256": sha,
                "path": path.map_or_else(|| unknown("not one of the kernels crate's embedded code objects"), known),
                "launches": kernels.values().sum::<u32>(),
                "kernels": kernels.iter().map(|(symbol, n)| json!({"symbol": symbol, "launches": n})).collect::<Vec<_>>(),
            })
        })
        .collect();
    Value::Array(rows)
}

/// The launches grouped by kernel, geometry, LDS and wave size, each group with its launch
/// indices: every launch is in exactly one group.
fn geometry(launches: &[LaunchRecord]) -> Value {
    type Key<'a> = (&'a str, [u32; 3], [u16; 3], u32, u8);
    let mut groups: Vec<(Key<'_>, Vec<usize>)> = Vec::new();
    for (index, l) in launches.iter().enumerate() {
        let lds = l.lds.static_bytes.saturating_add(l.lds.dynamic_bytes);
        let key =
            (l.artifact.symbol.as_str(), l.geometry.grid_work_items, l.geometry.workgroup_work_items, lds, l.wave_size);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, indices)) => indices.push(index),
            None => groups.push((key, vec![index])),
        }
    }
    let workgroups: u64 =
        launches.iter().map(|l| l.geometry.grid_workgroups().iter().map(|&n| u64::from(n)).product::<u64>()).sum();
    json!({
        "launches": launches.len(),
        "workgroups_total": workgroups,
        "groups": groups.iter().map(|((symbol, grid, block, lds, wave), indices)| {
            let geometry = tape_core::Geometry { grid_work_items: *grid, workgroup_work_items: *block };
            json!({
                "symbol": symbol, "grid_work_items": grid, "workgroup_work_items": block,
                "grid_workgroups": geometry.grid_workgroups(), "lds_bytes": lds, "wave_size": wave,
                "launch_indices": indices,
            })
        }).collect::<Vec<_>>(),
    })
}

/// Counts of launches with known and unknown effects, and the bytes of the known ranges by
/// access.
fn effects(launches: &[LaunchRecord]) -> Value {
    let (mut known_launches, mut unknown_launches, mut ranges) = (0u32, 0u32, 0u64);
    let mut bytes = [0u64; 3];
    let mut allocations = std::collections::BTreeSet::new();
    for launch in launches {
        match &launch.effects {
            Effects::Unknown => unknown_launches += 1,
            Effects::Known(list) => {
                known_launches += 1;
                for e in list {
                    ranges += 1;
                    allocations.insert(e.allocation);
                    let slot = match e.access {
                        Access::Read => 0,
                        Access::Write => 1,
                        Access::ReadWrite => 2,
                    };
                    bytes[slot] = bytes[slot].saturating_add(e.len_bytes);
                }
            }
        }
    }
    json!({
        "known_launches": known_launches, "unknown_launches": unknown_launches, "ranges": ranges,
        "allocations": allocations.len(),
        "read_bytes": bytes[0], "write_bytes": bytes[1], "read_write_bytes": bytes[2],
    })
}

/// The tape as the report shows it (see the module documentation).
#[must_use]
pub fn summary(tape: &Tape) -> Value {
    let id = tape.identity();
    let bindings: Vec<Value> = tape
        .bindings()
        .iter()
        .map(|b| {
            let mut v = tape_core::show::binding_kind(&b.kind);
            v["name"] = json!(b.name);
            v["launch"] = json!(b.launch);
            v
        })
        .collect();
    json!({
        "identity": {
            "dispatch_count": id.dispatch_count, "unique_kernels": id.unique_kernels,
            "external_launches": id.external_launches, "sequence_hash": HexBytes(&id.sequence_hash).to_string(),
        },
        "position": tape.position(),
        "artifacts": artifacts(tape.launches()),
        "geometry": geometry(tape.launches()),
        "effects": effects(tape.launches()),
        "bindings": bindings,
        "external": tape.external().iter().map(|e| json!({"name": e.name, "count": e.count})).collect::<Vec<_>>(),
    })
}

/// The fact of a controller's tape: its summary, or why there is none.
#[must_use]
pub fn fact(tape: Option<&Tape>, state: &str) -> Value {
    match tape {
        Some(tape) => known(summary(tape)),
        None => unknown(format!("the retained arm holds no captured tape (controller state {state})")),
    }
}
