//! The kernel trace: one rocprofv3 `kernel_trace.csv` line per kernel dispatch the packet
//! processor executes (the format is `tape_core::census::trace`'s; `docs/ARCHITECTURE.md`, "The
//! census", says what each column holds here).
//!
//! It is asked for with [`KERNEL_TRACE_ENV`] (`REDLINE_KERNEL_TRACE`): a path to a file, created
//! or truncated, or to an existing directory, in which the file is `<pid>_kernel_trace.csv` as
//! rocprofv3 names it. The trace is per process: every soft device and every queue of the soft
//! HSA runtime in the process writes to the one file, and `Dispatch_Id` counts the process's
//! dispatches in the order they ran. The producer is the AQL packet processor itself
//! ([`crate::aql::execute`]): it sees packets, never the calls of whoever recorded them. A line is
//! written (one `write` call, no buffering) when its dispatch has run, so a reader in the same
//! process sees every finished dispatch.
//!
//! Columns the packet processor does not know: `Stream_Id` 0 (no HIP stream), `Thread_Id` the
//! process id (the thread that wrote the packet is not in the packet), `Correlation_Id` the
//! `Dispatch_Id` (no API call to correlate with), `Kernel_Id` the kernel descriptor's VA.
//! Timestamps are nanoseconds of the host's monotonic clock since the process's first trace use
//! ([`origin`]).
//!
//! A device can also keep the rows in memory ([`crate::aql::ProcessReport::trace`]): the soft
//! device's `hal::Device::begin_kernel_trace`, and the soft HSA runtime's extension, hand them
//! to the census in the same process.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

use tape_core::census::trace::{KERNEL_DISPATCH, TraceRow, header_line, lds_block_size};

/// The environment variable that asks for a kernel trace: a file path, or a directory.
pub const KERNEL_TRACE_ENV: &str = "REDLINE_KERNEL_TRACE";

/// The file name in a directory, after the process id (rocprofv3's own name).
pub const KERNEL_TRACE_FILE_SUFFIX: &str = "_kernel_trace.csv";

/// Where a dispatch ran, as the trace names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceSite {
    /// The agent's index (`Agent N`).
    pub agent: u32,
    /// The queue's id.
    pub queue_id: u64,
}

/// One executed kernel dispatch, as the packet processor saw it.
#[derive(Clone, Copy, Debug)]
pub struct TracedDispatch<'a> {
    /// Where it ran.
    pub site: TraceSite,
    /// The kernel's name.
    pub kernel: &'a str,
    /// Its descriptor VA.
    pub kernel_object: u64,
    /// Its static LDS, bytes.
    pub static_lds_bytes: u32,
    /// The packet's private segment size, bytes.
    pub scratch_bytes: u32,
    /// The kernel's `.vgpr_count`, `.agpr_count` and `.sgpr_count`.
    pub registers: [u32; 3],
    /// Work-group, work-items.
    pub workgroup: [u16; 3],
    /// Grid, work-items.
    pub grid: [u32; 3],
    /// When it started.
    pub start: Instant,
    /// When it ended.
    pub end: Instant,
}

/// An open kernel trace.
#[derive(Debug)]
struct KernelTrace {
    file: File,
    next_dispatch_id: u64,
}

/// The process's trace, opened at the first dispatch when [`KERNEL_TRACE_ENV`] is set.
static TRACE: OnceLock<Option<Mutex<KernelTrace>>> = OnceLock::new();

/// The file a trace at `requested` goes to: the path itself, or `<pid>_kernel_trace.csv` in it
/// when it is a directory.
#[must_use]
pub fn trace_file(requested: &Path) -> PathBuf {
    if requested.is_dir() {
        requested.join(format!("{}{KERNEL_TRACE_FILE_SUFFIX}", std::process::id()))
    } else {
        requested.to_path_buf()
    }
}

fn open() -> Option<Mutex<KernelTrace>> {
    let requested = std::env::var_os(KERNEL_TRACE_ENV).filter(|v| !v.is_empty())?;
    let _ = origin();
    let path = trace_file(Path::new(&requested));
    let opened = File::create(&path).and_then(|mut file| file.write_all(header_line().as_bytes()).map(|()| file));
    match opened {
        Ok(file) => Some(Mutex::new(KernelTrace { file, next_dispatch_id: 1 })),
        Err(e) => {
            // A trace that was asked for and cannot be written is said once; dispatches run on.
            eprintln!("redline: {KERNEL_TRACE_ENV}={}: cannot write the kernel trace: {e}", path.display());
            None
        }
    }
}

/// Whether this process writes a kernel trace.
#[must_use]
pub fn enabled() -> bool {
    TRACE.get_or_init(open).is_some()
}

/// The instant the process's trace timestamps count from: its first use (the file's or a
/// device's in-memory trace's).
#[must_use]
pub fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// The row of `dispatch`, numbered `dispatch_id`, its timestamps in nanoseconds since
/// [`origin`].
#[must_use]
pub fn row(dispatch: &TracedDispatch<'_>, dispatch_id: u64) -> TraceRow {
    let origin = origin();
    let ns = |t: Instant| u64::try_from(t.saturating_duration_since(origin).as_nanos()).unwrap_or(u64::MAX);
    let [vgpr_count, accum_vgpr_count, sgpr_count] = dispatch.registers;
    TraceRow {
        kind: KERNEL_DISPATCH.into(),
        agent_id: format!("Agent {}", dispatch.site.agent),
        queue_id: dispatch.site.queue_id,
        stream_id: 0,
        thread_id: u64::from(std::process::id()),
        dispatch_id,
        kernel_id: dispatch.kernel_object,
        kernel_name: dispatch.kernel.into(),
        correlation_id: dispatch_id,
        start_timestamp_ns: ns(dispatch.start),
        end_timestamp_ns: ns(dispatch.end),
        lds_block_size_bytes: lds_block_size(dispatch.static_lds_bytes),
        scratch_size_bytes: dispatch.scratch_bytes,
        vgpr_count,
        accum_vgpr_count,
        sgpr_count,
        workgroup_size: dispatch.workgroup.map(u32::from),
        grid_size: dispatch.grid,
    }
}

/// Appends `dispatch` to the process's trace, if it writes one.
pub fn record(dispatch: &TracedDispatch<'_>) {
    let Some(trace) = TRACE.get_or_init(open) else { return };
    let mut trace = trace.lock().unwrap_or_else(PoisonError::into_inner);
    let dispatch_id = trace.next_dispatch_id;
    let row = row(dispatch, dispatch_id);
    let mut line = String::new();
    row.write_line(&mut line);
    // A failed write is said and the trace goes on: the census then finds the gap.
    if let Err(e) = trace.file.write_all(line.as_bytes()) {
        eprintln!("redline: kernel trace: dispatch {dispatch_id} not written: {e}");
    }
    trace.next_dispatch_id += 1;
}
