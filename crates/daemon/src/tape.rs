//! `redline tape show`: a stored tape's identity, launches, effects, boundaries and bindings.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use std::path::Path;

use anyhow::Result;
use infile::Limit;
use serde_json::{Value, json};
use tape_core::binding::BindingKind;
use tape_core::serial::{HexBytes, TAPE_MAGIC, TapeData, validate};
use tape_core::tape::Tape;
use tape_core::{Effects, LaunchRecord, deps};

/// The largest tape file `tape show` and `lower --tape` read, JSON or binary: 256 MiB. A real
/// decode step is far smaller (the built-in `tiny` model's tape is about 57 KB of JSON, some
/// 1.6 KB per launch, and a 135M-parameter model's ~500 launches below 1 MB); even a tape at the
/// launch limit of 65 536 such launches stays under half of it. A larger file is refused before
/// it is read (exit 1).
pub const TAPE_FILE_LIMIT: Limit = Limit::new("tape", infile::mib(256));

/// Most bytes of a decoder's message quoted in an error (serde_json quotes offending strings and
/// unknown field names whole).
const MESSAGE_BYTES_MAX: usize = 160;

/// Work with stored tapes.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print a tape: identity, launches with their effects, the waits a single in-order queue
    /// needs, the dependency edges, and the dynamic bindings.
    ///
    /// FILE is a tape in the readable JSON form or the compact binary form (starts with
    /// `RLTAPE`), a regular file of at most 256 MiB; either form is decoded and validated (the
    /// checks recording and `redline lower` apply: geometry, LDS, kernarg, pointers, effects,
    /// external counts, bindings) before anything is printed. Errors name the place: the field
    /// path and byte offset in a binary tape, the line, column and JSON path in a JSON one, the
    /// launch and field for a value that breaks a rule.
    ///
    /// Exit codes: 0 printed; 1 the tape is invalid or larger than 256 MiB; 2 usage or I/O (a
    /// missing or unreadable file, a directory, a device such as /dev/zero, a FIFO).
    Show {
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
        /// The tape file.
        file: PathBuf,
    },
}

/// Runs a `tape` subcommand; `Ok(1)` for a tape that does not load.
///
/// # Errors
/// I/O errors.
pub fn run(command: &Command) -> Result<ExitCode> {
    let Command::Show { json, file } = command;
    let bytes = read(file)?;
    let tape = match load(&bytes) {
        Ok(t) => t,
        Err(msg) => {
            eprintln!("redline: tape show: {}: {msg}", file.display());
            return Ok(ExitCode::from(1));
        }
    };
    let doc = match document(&tape) {
        Ok(d) => d,
        Err(msg) => {
            eprintln!("redline: tape show: {}: {msg}", file.display());
            return Ok(ExitCode::from(1));
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if *json {
        serde_json::to_writer_pretty(&mut out, &doc)?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(text(&doc).as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads a tape file: a regular file of at most [`TAPE_FILE_LIMIT`] bytes, checked before the
/// first byte is read.
///
/// # Errors
/// [`infile::ReadError`] (in the chain, for the exit code): too large (exit 1), missing,
/// unreadable or not a regular file (exit 2).
pub fn read(file: &Path) -> Result<Vec<u8>> {
    Ok(infile::read(file, TAPE_FILE_LIMIT)?)
}

/// Loads a binary (`RLTAPE` magic) or JSON tape, validated.
///
/// # Errors
/// A message naming what is wrong and where: the field path and byte offset of a binary decode
/// error, the line, column and JSON path of a JSON one, the launch and field of a value that
/// fails validation.
pub fn load(bytes: &[u8]) -> Result<Tape, String> {
    if bytes.starts_with(&TAPE_MAGIC) {
        return Tape::from_binary(bytes).map_err(|e| format!("invalid binary tape: {e}"));
    }
    let data = serde_json::from_slice::<TapeData>(bytes).map_err(|e| json_error(bytes, &e))?;
    validate(data).map_err(|e| format!("invalid JSON tape: {e}"))
}

/// A serde_json error with its line and column, the JSON path of the value it stopped at, and
/// its message cut to [`MESSAGE_BYTES_MAX`] bytes.
fn json_error(text: &[u8], error: &serde_json::Error) -> String {
    let full = error.to_string();
    let (line, column) = (error.line(), error.column());
    let suffix = format!(" at line {line} column {column}");
    let message = cut(full.strip_suffix(&suffix).unwrap_or(&full));
    let hint = if text.first().is_some_and(|&b| b != b'{' && !b.is_ascii_whitespace()) {
        " (a tape is JSON or starts with RLTAPE)"
    } else {
        ""
    };
    if line == 0 {
        return format!("invalid JSON tape: {message}{hint}");
    }
    let path = line_start(text, line).map(|start| json_path_at(text, start.saturating_add(column)));
    match path.filter(|p| !p.is_empty()) {
        Some(path) => format!("invalid JSON tape at line {line} column {column}, {path}: {message}{hint}"),
        None => format!("invalid JSON tape at line {line} column {column}: {message}{hint}"),
    }
}

/// `message` cut to about [`MESSAGE_BYTES_MAX`] bytes: its start and its end (where serde_json
/// says what it expected), `…` in place of the middle.
fn cut(message: &str) -> String {
    if message.len() <= MESSAGE_BYTES_MAX {
        return message.to_owned();
    }
    let (mut head, mut tail) = (MESSAGE_BYTES_MAX * 2 / 3, message.len() - MESSAGE_BYTES_MAX / 3);
    while !message.is_char_boundary(head) {
        head -= 1;
    }
    while !message.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}…{}", &message[..head], &message[tail..])
}

/// Byte offset of the first byte of 1-based line `line`.
fn line_start(text: &[u8], line: usize) -> Option<usize> {
    if line <= 1 {
        return Some(0);
    }
    text.iter().enumerate().filter(|&(_, &b)| b == b'\n').nth(line - 2).map(|(i, _)| i + 1)
}

/// The JSON path (`launches[0].geometry.grid_work_items[1]`) of the value a parser reading
/// `text` is in at byte `offset`, from a scan of the bytes before it: the open objects (with the
/// key last read in each) and arrays (with the index of the element). Keys are cut to 32 bytes.
fn json_path_at(text: &[u8], offset: usize) -> String {
    enum Frame {
        Object { key: Option<String>, expect_key: bool },
        Array { index: usize },
    }
    let end = offset.min(text.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < end {
        match text[i] {
            b'{' => stack.push(Frame::Object { key: None, expect_key: true }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array { index }) => *index = index.saturating_add(1),
                Some(Frame::Object { key, expect_key }) => {
                    *key = None;
                    *expect_key = true;
                }
                None => {}
            },
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while let Some(&b) = text.get(j) {
                    match b {
                        b'"' => break,
                        b'\\' => j += 2,
                        _ => j += 1,
                    }
                }
                if let Some(Frame::Object { key, expect_key }) = stack.last_mut()
                    && *expect_key
                {
                    let raw = text.get(start..j.min(text.len()).min(start.saturating_add(32))).unwrap_or_default();
                    *key = Some(String::from_utf8_lossy(raw).into_owned());
                    *expect_key = false;
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object { key: Some(key), .. } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Object { key: None, .. } => {}
            Frame::Array { index } => {
                let _ = write!(path, "[{index}]");
            }
        }
    }
    path
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

pub(crate) fn binding_kind(k: &BindingKind) -> Value {
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
    }
}

/// The report as JSON (the text form is rendered from it).
///
/// # Errors
/// When the tape is beyond the dependency derivation's limits.
pub fn document(tape: &Tape) -> Result<Value, String> {
    let id = tape.identity();
    let launches = tape.launches();
    let boundaries = deps::boundaries(launches).map_err(|e| e.to_string())?;
    let dag = deps::dependencies(launches).map_err(|e| e.to_string())?;
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

fn text(doc: &Value) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The path at the byte just after the first occurrence of `marker` in `text`.
    fn path_after(text: &str, marker: &str) -> String {
        let at = text.find(marker).unwrap() + marker.len();
        json_path_at(text.as_bytes(), at)
    }

    #[test]
    fn json_paths_follow_keys_and_indices() {
        let text = r#"{"a": {"b": [1, {"c": "x,]}{\"y"}, [2, 3]]}, "d": 4}"#;
        assert_eq!(path_after(text, r#""a""#), "a");
        assert_eq!(path_after(text, "[1"), "a.b[0]");
        assert_eq!(path_after(text, r#""c""#), "a.b[1].c");
        // Brackets, commas and escaped quotes inside strings are not structure.
        assert_eq!(path_after(text, r#"\"y""#), "a.b[1].c");
        assert_eq!(path_after(text, "[2, "), "a.b[2][1]");
        assert_eq!(path_after(text, "3]"), "a.b[2]");
        assert_eq!(path_after(text, r#""d""#), "d");
        assert_eq!(json_path_at(text.as_bytes(), 0), "");
        assert_eq!(json_path_at(text.as_bytes(), usize::MAX), "");
        // A string that never ends, a long key: no panic, the key cut to 32 bytes.
        assert_eq!(json_path_at(br#"{"abc"#, 5), "abc");
        let long = format!(r#"{{"{}": 1"#, "k".repeat(100));
        assert_eq!(json_path_at(long.as_bytes(), long.len()), "k".repeat(32));
        assert_eq!(json_path_at(br#"{"a": "\"#, 8), "a");
    }

    #[test]
    fn long_messages_keep_their_start_and_end() {
        let short = "invalid type: string \"x\", expected u32";
        assert_eq!(cut(short), short);
        let long = format!("invalid type: string \"{}\", expected u32", "é".repeat(1000));
        let kept = cut(&long);
        assert!(kept.len() <= MESSAGE_BYTES_MAX + '…'.len_utf8() + 1, "{}", kept.len());
        assert!(kept.starts_with("invalid type: string \"é") && kept.ends_with("\", expected u32"), "{kept}");
    }

    #[test]
    fn lines_start_after_their_newline() {
        let text = b"a\nbc\n\nd";
        assert_eq!(line_start(text, 1), Some(0));
        assert_eq!(line_start(text, 2), Some(2));
        assert_eq!(line_start(text, 4), Some(6));
        assert_eq!(line_start(text, 5), None);
    }
}
