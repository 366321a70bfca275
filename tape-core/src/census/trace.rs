//! The kernel trace: rocprofv3's `kernel_trace.csv`, written by the soft device and the soft HSA
//! runtime and read by the census.
//!
//! The format is rocprofv3's CSV kernel trace (rocprofiler-sdk, `source/lib/output/generateCSV.cpp`,
//! the kernel-dispatch generator; the repository's `docs/ARCHITECTURE.md`, "The census", lists the
//! columns and what each producer writes in them). One header line of 22 quoted column names
//! ([`HEADER`]), then one line per kernel dispatch: text fields quoted (a quote inside doubled),
//! numbers bare, `Kind` `KERNEL_DISPATCH`, timestamps in nanoseconds. `LDS_Block_Size` is the
//! kernel's static LDS (its `.group_segment_fixed_size`) rounded up to [`LDS_BLOCK_BYTES`], as
//! rocprofv3 computes it; the dispatch's dynamic LDS does not appear in the trace.
//!
//! [`parse`] reads such a file: it maps the columns by name (so a trace whose columns come in
//! another order, or with more columns, still reads), requires every column of [`HEADER`], and
//! never panics: a malformed line is a [`TraceError`] naming the line, the column and the value.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use serde::Serialize;

/// rocprofv3's kernel-trace columns, in the order it writes them.
pub const HEADER: [&str; 22] = [
    "Kind",
    "Agent_Id",
    "Queue_Id",
    "Stream_Id",
    "Thread_Id",
    "Dispatch_Id",
    "Kernel_Id",
    "Kernel_Name",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
    "LDS_Block_Size",
    "Scratch_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Workgroup_Size_X",
    "Workgroup_Size_Y",
    "Workgroup_Size_Z",
    "Grid_Size_X",
    "Grid_Size_Y",
    "Grid_Size_Z",
];

/// The `Kind` of a kernel-dispatch row.
pub const KERNEL_DISPATCH: &str = "KERNEL_DISPATCH";

/// The granule of `LDS_Block_Size`: rocprofv3 rounds the kernel's static LDS up to 128 dwords.
pub const LDS_BLOCK_BYTES: u32 = 128 * 4;

/// Most rows [`parse`] reads (a decode step of a few hundred launches over thousands of tokens
/// stays far below).
pub const TRACE_ROWS_MAX: usize = 1 << 22;

/// `static_bytes` rounded up to [`LDS_BLOCK_BYTES`], as `LDS_Block_Size` holds it (saturating at
/// the largest multiple that fits).
#[must_use]
pub fn lds_block_size(static_bytes: u32) -> u32 {
    let blocks = u64::from(static_bytes).div_ceil(u64::from(LDS_BLOCK_BYTES));
    u32::try_from(blocks * u64::from(LDS_BLOCK_BYTES)).unwrap_or(u32::MAX - (u32::MAX % LDS_BLOCK_BYTES))
}

/// One kernel dispatch of the trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceRow {
    /// `Kind` (always [`KERNEL_DISPATCH`] in a kernel trace).
    pub kind: String,
    /// `Agent_Id`: rocprofv3 writes `Agent N` (or a bare number in older versions).
    pub agent_id: String,
    /// `Queue_Id`.
    pub queue_id: u64,
    /// `Stream_Id` (0 outside HIP streams).
    pub stream_id: u64,
    /// `Thread_Id`.
    pub thread_id: u64,
    /// `Dispatch_Id`: increasing in the order the dispatches were issued.
    pub dispatch_id: u64,
    /// `Kernel_Id`.
    pub kernel_id: u64,
    /// `Kernel_Name`.
    pub kernel_name: String,
    /// `Correlation_Id`.
    pub correlation_id: u64,
    /// `Start_Timestamp`, nanoseconds.
    pub start_timestamp_ns: u64,
    /// `End_Timestamp`, nanoseconds.
    pub end_timestamp_ns: u64,
    /// `LDS_Block_Size`, bytes (see [`lds_block_size`]).
    pub lds_block_size_bytes: u32,
    /// `Scratch_Size`: the dispatch's private segment, bytes per work-item.
    pub scratch_size_bytes: u32,
    /// `VGPR_Count`.
    pub vgpr_count: u32,
    /// `Accum_VGPR_Count`.
    pub accum_vgpr_count: u32,
    /// `SGPR_Count`.
    pub sgpr_count: u32,
    /// `Workgroup_Size_X/Y/Z`, work-items.
    pub workgroup_size: [u32; 3],
    /// `Grid_Size_X/Y/Z`, work-items.
    pub grid_size: [u32; 3],
}

/// The header line, with its line end.
#[must_use]
pub fn header_line() -> String {
    let mut line = String::new();
    for (i, name) in HEADER.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        push_quoted(&mut line, name);
    }
    line.push('\n');
    line
}

fn push_quoted(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
}

impl TraceRow {
    /// Appends the row as one CSV line (with its line end) to `out`.
    pub fn write_line(&self, out: &mut String) {
        push_quoted(out, &self.kind);
        out.push(',');
        push_quoted(out, &self.agent_id);
        // Writing into a String cannot fail.
        let _ = write!(
            out,
            ",{},{},{},{},{},",
            self.queue_id, self.stream_id, self.thread_id, self.dispatch_id, self.kernel_id
        );
        push_quoted(out, &self.kernel_name);
        let [wx, wy, wz] = self.workgroup_size;
        let [gx, gy, gz] = self.grid_size;
        let _ = writeln!(
            out,
            ",{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            self.correlation_id,
            self.start_timestamp_ns,
            self.end_timestamp_ns,
            self.lds_block_size_bytes,
            self.scratch_size_bytes,
            self.vgpr_count,
            self.accum_vgpr_count,
            self.sgpr_count,
            wx,
            wy,
            wz,
            gx,
            gy,
            gz
        );
    }
}

/// Why a kernel trace does not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("kernel trace line {line}: {kind}")]
pub struct TraceError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong there.
    pub kind: TraceErrorKind,
}

/// What is wrong with a line of a kernel trace.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceErrorKind {
    /// The file is empty.
    #[error("no header line (an empty file)")]
    Empty,
    /// The header lacks a column.
    #[error("the header has no column \"{column}\"")]
    MissingColumn {
        /// The column.
        column: &'static str,
    },
    /// The header names a column twice.
    #[error("the header names column \"{column}\" twice")]
    DuplicateColumn {
        /// The column.
        column: String,
    },
    /// A quoted field does not end on its line, or a quote is followed by something other than
    /// a comma.
    #[error("field {field}: a quote does not close where the field ends")]
    Quote {
        /// 1-based field number.
        field: usize,
    },
    /// Not as many fields as the header.
    #[error("{found} fields, the header has {expected}")]
    FieldCount {
        /// Header columns.
        expected: usize,
        /// Fields on the line.
        found: usize,
    },
    /// A number column holds something else.
    #[error("column \"{column}\" holds \"{value}\", not an unsigned number of at most {bits} bits")]
    Number {
        /// The column.
        column: &'static str,
        /// The value (at most 64 bytes of it).
        value: String,
        /// The width it must fit.
        bits: u32,
    },
    /// A row that is not a kernel dispatch.
    #[error("Kind \"{kind}\" is not {KERNEL_DISPATCH}")]
    Kind {
        /// The value (at most 64 bytes of it).
        kind: String,
    },
    /// More rows than [`TRACE_ROWS_MAX`].
    #[error("more than {limit} rows")]
    TooManyRows {
        /// [`TRACE_ROWS_MAX`].
        limit: usize,
    },
}

/// Splits one CSV line into fields (quotes removed, doubled quotes undone).
fn fields(line: &str) -> Result<Vec<String>, TraceErrorKind> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let field_no = out.len() + 1;
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err(TraceErrorKind::Quote { field: field_no }),
                }
            }
            match chars.next() {
                None => {
                    out.push(field);
                    return Ok(out);
                }
                Some(',') => out.push(field),
                Some(_) => return Err(TraceErrorKind::Quote { field: field_no }),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        out.push(field);
                        return Ok(out);
                    }
                    Some(',') => break,
                    Some('"') => return Err(TraceErrorKind::Quote { field: field_no }),
                    Some(c) => field.push(c),
                }
            }
            out.push(field);
        }
    }
}

/// At most 64 bytes of `value` (cut at a character boundary), for an error.
fn excerpt(value: &str) -> String {
    let mut end = value.len().min(64);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    String::from(&value[..end])
}

/// The header's column index of every name of [`HEADER`].
fn columns(header: &str) -> Result<[usize; 22], TraceErrorKind> {
    let names = fields(header)?;
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(TraceErrorKind::DuplicateColumn { column: excerpt(name) });
        }
    }
    let mut index = [0usize; 22];
    for (slot, column) in index.iter_mut().zip(HEADER) {
        *slot = names.iter().position(|n| n == column).ok_or(TraceErrorKind::MissingColumn { column })?;
    }
    Ok(index)
}

/// One data line, its fields at the header's `index`.
fn row(line: &str, index: &[usize; 22], width: usize) -> Result<TraceRow, TraceErrorKind> {
    let f = fields(line)?;
    if f.len() != width {
        return Err(TraceErrorKind::FieldCount { expected: width, found: f.len() });
    }
    let text = |i: usize| f[index[i]].clone();
    let u64_at = |i: usize| {
        let value = &f[index[i]];
        value.parse::<u64>().map_err(|_| TraceErrorKind::Number { column: HEADER[i], value: excerpt(value), bits: 64 })
    };
    let u32_at = |i: usize| {
        let value = &f[index[i]];
        value.parse::<u32>().map_err(|_| TraceErrorKind::Number { column: HEADER[i], value: excerpt(value), bits: 32 })
    };
    let kind = text(0);
    if kind != KERNEL_DISPATCH {
        return Err(TraceErrorKind::Kind { kind: excerpt(&kind) });
    }
    Ok(TraceRow {
        kind,
        agent_id: text(1),
        queue_id: u64_at(2)?,
        stream_id: u64_at(3)?,
        thread_id: u64_at(4)?,
        dispatch_id: u64_at(5)?,
        kernel_id: u64_at(6)?,
        kernel_name: text(7),
        correlation_id: u64_at(8)?,
        start_timestamp_ns: u64_at(9)?,
        end_timestamp_ns: u64_at(10)?,
        lds_block_size_bytes: u32_at(11)?,
        scratch_size_bytes: u32_at(12)?,
        vgpr_count: u32_at(13)?,
        accum_vgpr_count: u32_at(14)?,
        sgpr_count: u32_at(15)?,
        workgroup_size: [u32_at(16)?, u32_at(17)?, u32_at(18)?],
        grid_size: [u32_at(19)?, u32_at(20)?, u32_at(21)?],
    })
}

/// Reads a kernel trace: the header, then every non-empty line as a row, in file order (a line
/// end may be `\n` or `\r\n`).
///
/// # Errors
/// [`TraceError`] with the line and what is wrong there.
pub fn parse(text: &str) -> Result<Vec<TraceRow>, TraceError> {
    let mut lines = text.split('\n').enumerate().map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)));
    let (header_no, header) =
        lines.next().filter(|(_, l)| !l.is_empty()).ok_or(TraceError { line: 1, kind: TraceErrorKind::Empty })?;
    let index = columns(header).map_err(|kind| TraceError { line: header_no, kind })?;
    let width = fields(header).map_or(0, |f| f.len());
    let mut rows = Vec::new();
    for (line, content) in lines.filter(|(_, l)| !l.is_empty()) {
        if rows.len() == TRACE_ROWS_MAX {
            return Err(TraceError { line, kind: TraceErrorKind::TooManyRows { limit: TRACE_ROWS_MAX } });
        }
        rows.push(row(content, &index, width).map_err(|kind| TraceError { line, kind })?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row as rocprofv3's documentation shows one (rocprofiler-sdk, `using-rocprofv3.rst`,
    /// agent index section), header and all.
    const ROCPROFV3: &str = "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\n\"KERNEL_DISPATCH\",\"Agent 7\",17,26,847809,101,49,\"void addition_kernel<float>(float*, float const*, float const*, int, int)\",101,1551401624448706,1551401624459226,0,0,8,0,16,64,1,1,1024,1024,1\n";

    #[test]
    fn reads_rocprofv3s_own_output() {
        let rows = parse(ROCPROFV3).unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(r.agent_id, "Agent 7");
        assert_eq!((r.queue_id, r.stream_id, r.thread_id, r.dispatch_id, r.kernel_id), (17, 26, 847_809, 101, 49));
        assert_eq!(r.kernel_name, "void addition_kernel<float>(float*, float const*, float const*, int, int)");
        assert_eq!((r.start_timestamp_ns, r.end_timestamp_ns), (1_551_401_624_448_706, 1_551_401_624_459_226));
        assert_eq!((r.vgpr_count, r.accum_vgpr_count, r.sgpr_count), (8, 0, 16));
        assert_eq!(r.workgroup_size, [64, 1, 1]);
        assert_eq!(r.grid_size, [1024, 1024, 1]);
    }

    #[test]
    fn header_is_rocprofv3s_byte_for_byte() {
        assert_eq!(header_line(), ROCPROFV3.lines().next().map(|l| alloc::format!("{l}\n")).unwrap());
    }

    #[test]
    fn written_rows_read_back() {
        let mut text = header_line();
        let rows = parse(ROCPROFV3).unwrap();
        let mut odd = rows[0].clone();
        odd.kernel_name = String::from("quote \" and, comma");
        odd.lds_block_size_bytes = 1024;
        for r in rows.iter().chain([&odd]) {
            r.write_line(&mut text);
        }
        let back = parse(&text).unwrap();
        assert_eq!(back, [rows[0].clone(), odd]);
        // The written line of rocprofv3's own row is its line.
        assert_eq!(text.lines().nth(1), ROCPROFV3.lines().nth(1));
    }

    #[test]
    fn columns_map_by_name() {
        // The same row with two columns swapped in header and data, and an extra column.
        let text = "\"Agent_Id\",\"Kind\",\"Extra\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\r\n\"Agent 1\",\"KERNEL_DISPATCH\",x,1,0,5,2,3,\"k\",4,10,20,512,0,1,0,2,32,1,1,64,1,1\r\n";
        let rows = parse(text).unwrap();
        assert_eq!((rows[0].agent_id.as_str(), rows[0].kernel_name.as_str()), ("Agent 1", "k"));
        assert_eq!((rows[0].lds_block_size_bytes, rows[0].grid_size), (512, [64, 1, 1]));
    }

    #[test]
    fn bad_lines_are_named() {
        let header = header_line();
        let good = ROCPROFV3.lines().nth(1).unwrap();
        let cases: [(String, TraceError); 6] = [
            (String::new(), TraceError { line: 1, kind: TraceErrorKind::Empty }),
            (
                String::from("\"Kind\"\n"),
                TraceError { line: 1, kind: TraceErrorKind::MissingColumn { column: "Agent_Id" } },
            ),
            (
                alloc::format!("{header}{}\n", good.replacen(",17,", ",-17,", 1)),
                TraceError {
                    line: 2,
                    kind: TraceErrorKind::Number { column: "Queue_Id", value: String::from("-17"), bits: 64 },
                },
            ),
            (
                alloc::format!("{header}{good}\n{}\n", good.replacen("KERNEL_DISPATCH", "MEMORY_COPY", 1)),
                TraceError { line: 3, kind: TraceErrorKind::Kind { kind: String::from("MEMORY_COPY") } },
            ),
            (
                alloc::format!("{header}{good},9\n"),
                TraceError { line: 2, kind: TraceErrorKind::FieldCount { expected: 22, found: 23 } },
            ),
            (
                alloc::format!("{header}\"KERNEL_DISPATCH\n"),
                TraceError { line: 2, kind: TraceErrorKind::Quote { field: 1 } },
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(&text), Err(expected), "{text:?}");
        }
    }

    #[test]
    fn lds_blocks_round_up() {
        assert_eq!(
            [lds_block_size(0), lds_block_size(1), lds_block_size(512), lds_block_size(513)],
            [0, 512, 512, 1024]
        );
        assert_eq!(lds_block_size(u32::MAX) % LDS_BLOCK_BYTES, 0);
    }
}
