//! The bounded recorder: copies the launches of one decode step into a [`Tape`].
//!
//! A capture is opened with [`Recorder::begin`] at a decode position, receives every launch of
//! the step through [`Recorder::record`] (checked against the kernel's [`KernargLayout`]) and
//! every launch deliberately kept off the tape through [`Recorder::record_external`], and is
//! closed by [`Recorder::finish`]. The first error of any call poisons the recorder: every later
//! call, `finish` included, returns [`RecordError::Poisoned`] naming that first error, so no
//! partial tape can come out of a capture that lost a launch. [`Recorder::reset`] starts over.
//!
//! The bound that is a constant is in the type: an open capture keeps its external names in a
//! `heapless::Vec<_, EXTERNAL_NAMES_MAX>`. Its launches stay a `Vec` reserved at [`Recorder::begin`]:
//! their bound is the capacity given to [`Recorder::new`], a run-time value, and a list typed at
//! [`RECORDER_CAPACITY_MAX`] launches would hold megabytes inline.
//!
//! A launch's owner declares the kernarg arguments that follow the position
//! ([`DeclaredArg`], through [`Recorder::record_declared`]): each becomes a named
//! [`Binding`] of that launch, checked at once against the value the
//! launch passes at the capture's position, and the finished tape carries them. Calibration then
//! confirms the declarations against a second recording and refuses any word that moves without
//! one ([`calibrate_declared`](crate::calibrate::calibrate_declared)).
//!
//! [`check_launch`] holds the checks a launch record must pass without its layout (they are
//! repeated on every tape that is deserialized); [`check_launch_with_layout`] adds those against
//! the layout, which only the recording side (or [`Tape::check_layouts`]) has.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use kernarg_abi::KernargLayout;
use kernarg_abi::metadata::ValueKind;

use crate::binding::{Binding, BindingError, BindingKind, Rule};
use crate::coverage::Uncovered;
use crate::record::LaunchRecord;
use crate::tape::{BINDINGS_MAX, ExternalCount, TAPE_KERNARG_BYTES_MAX, TAPE_LAUNCHES_MAX, Tape, TapeError};

/// Largest capacity a recorder accepts, in launches: [`TAPE_LAUNCHES_MAX`].
pub const RECORDER_CAPACITY_MAX: usize = TAPE_LAUNCHES_MAX;
/// Longest kernel symbol, bytes. Mangled template names run to a few hundred bytes.
pub const SYMBOL_BYTES_MAX: usize = 4096;
/// Most `Known` effects one launch may declare.
pub const EFFECTS_PER_LAUNCH_MAX: usize = 256;
/// Largest work-group, in work-items: the upper bound of AMDGPU's `.max_flat_workgroup_size`.
pub const WORKGROUP_WORK_ITEMS_MAX: u32 = 1024;
/// Largest grid, in work-items over all three axes (the product `x * y * z`): what an HSA GPU
/// agent reports as `HSA_ISA_INFO_GRID_MAX_SIZE`, 2^32 − 1. Each axis alone is a `u32` already.
pub const GRID_WORK_ITEMS_MAX: u64 = (1 << 32) - 1;
/// Largest static + dynamic LDS of a launch, bytes: what `COMPUTE_PGM_RSRC2.LDS_SIZE` (bits 23:15,
/// 9 bits) can encode in 512-byte granules (reference §3).
pub const LDS_BYTES_MAX: u32 = 0x1FF * 512;
/// Most distinct external names of one tape.
pub const EXTERNAL_NAMES_MAX: usize = 64;
/// Longest external name, bytes.
pub const EXTERNAL_NAME_BYTES_MAX: usize = 64;
/// Most external launches of one tape, over all names.
pub const EXTERNAL_LAUNCHES_MAX: u32 = 1 << 16;

/// Bytes of a pointer slot in the kernarg blob.
const POINTER_BYTES: u32 = 8;

mod check;

pub use check::{ExternalError, LaunchError, check_external_name, check_launch, check_launch_with_layout};
/// The recorder operation that found no open capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// [`Recorder::record`].
    Record,
    /// [`Recorder::record_external`].
    RecordExternal,
    /// [`Recorder::finish`].
    Finish,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Record => "record",
            Operation::RecordExternal => "record_external",
            Operation::Finish => "finish",
        })
    }
}

/// A kernarg argument of one launch that follows the decode position, declared by the launch's
/// owner: explicit argument `arg` (a 4-byte by-value argument) holds `rule` at every position.
/// A [`Rule::Offset`] becomes a [`BindingKind::KernargU32`], a [`Rule::Clamped`] a
/// [`BindingKind::KernargU32Clamped`]; grids are not kernarg arguments (a launch's grid follows
/// the position through calibration's grid rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeclaredArg<'a> {
    /// The binding's name, unique within the step (`layer3.attention.n`).
    pub name: &'a str,
    /// Index among the kernel's explicit arguments.
    pub arg: usize,
    /// What the argument holds at a position.
    pub rule: Rule,
}

/// What is wrong with a declared argument.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeclaredProblem {
    /// The kernel has no explicit argument with that index.
    #[error("the kernel has {explicit} explicit arguments, not an argument {arg}")]
    NoSuchArgument {
        /// The index declared.
        arg: usize,
        /// Explicit arguments of the kernel.
        explicit: usize,
    },
    /// The argument is not a 4-byte by-value argument.
    #[error("argument {arg} is a {kind} of {size} bytes, not a 4-byte by-value word")]
    NotAWord {
        /// The index declared.
        arg: usize,
        /// Its value kind, as the metadata names it.
        kind: String,
        /// Its size, bytes.
        size: u32,
    },
    /// A grid rule declared for a kernarg argument.
    #[error("rule `{rule}` is a grid rule: a kernarg argument holds `position + A` or `max(0, position + A)`")]
    GridRule {
        /// The rule.
        rule: Rule,
    },
    /// The rule has no value at the capture's position.
    #[error("rule `{rule}` has no value at position {position}: {error}")]
    NoValue {
        /// The rule.
        rule: Rule,
        /// The capture's position.
        position: u32,
        /// Why.
        error: BindingError,
    },
    /// The launch passes another value than the rule gives.
    #[error("rule `{rule}` gives {bound} at position {position}, the launch passes {passed}")]
    Disagrees {
        /// The rule.
        rule: Rule,
        /// The capture's position.
        position: u32,
        /// The rule's value.
        bound: u32,
        /// The word in the kernarg blob.
        passed: u32,
    },
    /// More declarations in the capture than a tape may hold.
    #[error("more than {limit} declared bindings in one capture")]
    TooMany {
        /// [`BINDINGS_MAX`].
        limit: usize,
    },
}

/// Why a capture failed. Every variant but [`RecordError::Poisoned`] poisons the recorder.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// A launch beyond the recorder's capacity.
    #[error("capture exceeds the recorder's capacity of {capacity} launches")]
    CapacityExceeded {
        /// The capacity.
        capacity: usize,
    },
    /// `record`, `record_external` or `finish` without an open capture.
    #[error("{operation} without an open capture")]
    NotOpen {
        /// The call.
        operation: Operation,
    },
    /// `begin` while a capture is open.
    #[error("begin while the capture at position {position} is open")]
    AlreadyOpen {
        /// Position of the open capture.
        position: u32,
    },
    /// A launch that fails its checks.
    #[error("launch {index}: {error}")]
    Launch {
        /// Index the launch would have had in the tape.
        index: usize,
        /// What is wrong with it.
        error: LaunchError,
    },
    /// A declared argument that is not what its declaration says.
    #[error("launch {index}: declared binding {name:?}: {problem}")]
    Declared {
        /// Index of the launch in the tape.
        index: usize,
        /// The declared name, cut to 64 characters.
        name: String,
        /// What is wrong.
        problem: DeclaredProblem,
    },
    /// Kernarg bytes of the capture above [`TAPE_KERNARG_BYTES_MAX`].
    #[error("capture holds {total} kernarg bytes, above the {limit}-byte limit")]
    KernargTotal {
        /// Bytes the capture would hold.
        total: usize,
        /// [`TAPE_KERNARG_BYTES_MAX`].
        limit: usize,
    },
    /// A launch whose declared effects leave out a range its kernel declares it touches
    /// ([`crate::coverage`]): the dependency derivation would order nothing by that range.
    #[error(
        "launch {index} ({kernel}): argument {argument} may {} {} bytes at offset {} of allocation {}, \
         which the launch's declared effects do not grant",
        if uncovered.missing == crate::record::Access::Read { "read" } else { "write" },
        uncovered.effect.len_bytes,
        uncovered.effect.offset_bytes,
        uncovered.effect.allocation.0
    )]
    Uncovered {
        /// Index the launch would have had in the tape.
        index: usize,
        /// The kernel's symbol, cut to 64 characters.
        kernel: String,
        /// The kernel's argument whose range is left out, cut to 64 characters.
        argument: String,
        /// The range and the access left out.
        uncovered: Uncovered,
    },
    /// A bad external launch.
    #[error(transparent)]
    External(#[from] ExternalError),
    /// The finished capture is not a valid tape (an empty capture).
    #[error(transparent)]
    Tape(#[from] TapeError),
    /// An earlier error poisoned the recorder; [`Recorder::reset`] starts over.
    #[error("the recorder is poisoned by an earlier error: {first}")]
    Poisoned {
        /// The error that poisoned it.
        first: Box<RecordError>,
    },
}

/// A bounded, fail-closed recorder of one decode step.
#[derive(Debug)]
pub struct Recorder {
    capacity_launches: usize,
    state: State,
}

#[derive(Debug)]
enum State {
    Idle,
    /// Boxed: the capture holds its external names inline.
    Open(Box<Capture>),
    /// INVARIANT: never holds a `RecordError::Poisoned`.
    Poisoned(RecordError),
}

#[derive(Debug)]
struct Capture {
    position: u32,
    launches: Vec<LaunchRecord>,
    external: heapless::Vec<ExternalCount, EXTERNAL_NAMES_MAX>,
    external_launches: u32,
    kernarg_bytes: usize,
    /// Declared bindings, in launch order.
    bindings: Vec<Binding>,
}

impl Capture {
    /// The bindings `declared` for the launch about to be recorded as `index`, checked against
    /// its blob at the capture's position.
    fn declare(
        &self,
        index: usize,
        launch: &LaunchRecord,
        layout: &KernargLayout,
        declared: &[DeclaredArg<'_>],
    ) -> Result<Vec<Binding>, RecordError> {
        let mut out = Vec::with_capacity(declared.len());
        for d in declared {
            let fail = |problem| RecordError::Declared { index, name: cut_name(d.name), problem };
            if self.bindings.len() + out.len() >= BINDINGS_MAX {
                return Err(fail(DeclaredProblem::TooMany { limit: BINDINGS_MAX }));
            }
            let explicit = layout.explicit_args().count();
            let arg = layout
                .explicit_args()
                .nth(d.arg)
                .ok_or_else(|| fail(DeclaredProblem::NoSuchArgument { arg: d.arg, explicit }))?;
            if arg.kind != ValueKind::ByValue || arg.size != 4 {
                return Err(fail(DeclaredProblem::NotAWord {
                    arg: d.arg,
                    kind: String::from(arg.kind.as_str()),
                    size: arg.size,
                }));
            }
            let (offset, rule, position) = (arg.offset, d.rule, self.position);
            let kind = match rule {
                Rule::Offset { addend } => BindingKind::KernargU32 { offset, addend },
                Rule::Clamped { addend } => BindingKind::KernargU32Clamped { offset, addend },
                Rule::Grid { .. } => return Err(fail(DeclaredProblem::GridRule { rule })),
            };
            let bound =
                kind.value_at(position).map_err(|error| fail(DeclaredProblem::NoValue { rule, position, error }))?;
            // The layout check of the launch (run before) keeps every argument inside the blob.
            let passed = usize::try_from(offset)
                .ok()
                .and_then(|at| launch.kernarg.get(at..at.checked_add(4)?))
                .map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            if bound != passed {
                return Err(fail(DeclaredProblem::Disagrees { rule, position, bound, passed }));
            }
            // CAST: `index` is below the recorder's capacity, at most TAPE_LAUNCHES_MAX.
            let launch = u32::try_from(index).unwrap_or(u32::MAX);
            out.push(Binding { name: String::from(d.name), launch, kind });
        }
        Ok(out)
    }

    fn record(&mut self, launch: LaunchRecord, layout: &KernargLayout, capacity: usize) -> Result<(), RecordError> {
        let index = self.launches.len();
        if index >= capacity {
            return Err(RecordError::CapacityExceeded { capacity });
        }
        check_launch_with_layout(&launch, layout).map_err(|error| RecordError::Launch { index, error })?;
        let total = self.kernarg_bytes.saturating_add(launch.kernarg.len());
        if total > TAPE_KERNARG_BYTES_MAX {
            return Err(RecordError::KernargTotal { total, limit: TAPE_KERNARG_BYTES_MAX });
        }
        self.kernarg_bytes = total;
        self.launches.push(launch);
        Ok(())
    }

    fn record_external(&mut self, name: &str) -> Result<(), ExternalError> {
        check_external_name(name)?;
        if self.external_launches >= EXTERNAL_LAUNCHES_MAX {
            return Err(ExternalError::TooManyLaunches { limit: EXTERNAL_LAUNCHES_MAX });
        }
        match self.external.iter_mut().find(|e| e.name == name) {
            // INVARIANT: count <= external_launches < EXTERNAL_LAUNCHES_MAX, so it cannot wrap.
            Some(entry) => entry.count += 1,
            None => {
                // A full list hands the new entry back: one name too many.
                if self.external.push(ExternalCount { name: String::from(name), count: 1 }).is_err() {
                    return Err(ExternalError::TooManyNames { limit: EXTERNAL_NAMES_MAX });
                }
            }
        }
        self.external_launches += 1;
        Ok(())
    }
}

impl Recorder {
    /// A recorder for captures of at most `capacity_launches` launches.
    ///
    /// # Panics
    /// When `capacity_launches` is 0 or above [`RECORDER_CAPACITY_MAX`] (a programming error).
    #[must_use]
    pub fn new(capacity_launches: usize) -> Self {
        assert!(
            capacity_launches > 0 && capacity_launches <= RECORDER_CAPACITY_MAX,
            "recorder capacity {capacity_launches} outside 1..={RECORDER_CAPACITY_MAX}"
        );
        Self { capacity_launches, state: State::Idle }
    }

    /// The capacity, in launches.
    #[must_use]
    pub fn capacity_launches(&self) -> usize {
        self.capacity_launches
    }

    /// Whether a capture is open.
    #[must_use]
    pub fn is_open(&self) -> bool {
        matches!(self.state, State::Open(_))
    }

    /// The error that poisoned the recorder, if one did.
    #[must_use]
    pub fn poisoned_by(&self) -> Option<&RecordError> {
        match &self.state {
            State::Poisoned(first) => Some(first),
            State::Idle | State::Open(_) => None,
        }
    }

    /// Launches recorded so far in the open capture (0 when none is open).
    #[must_use]
    pub fn recorded_launches(&self) -> usize {
        match &self.state {
            State::Open(capture) => capture.launches.len(),
            State::Idle | State::Poisoned(_) => 0,
        }
    }

    /// Opens a capture of the decode step at `position`.
    ///
    /// # Errors
    /// [`RecordError::AlreadyOpen`] (poisons), or [`RecordError::Poisoned`].
    pub fn begin(&mut self, position: u32) -> Result<(), RecordError> {
        match &self.state {
            State::Poisoned(first) => Err(poisoned(first)),
            State::Open(capture) => {
                let position = capture.position;
                Err(self.poison(RecordError::AlreadyOpen { position }))
            }
            State::Idle => {
                self.state = State::Open(Box::new(Capture {
                    position,
                    launches: Vec::with_capacity(self.capacity_launches),
                    external: heapless::Vec::new(),
                    external_launches: 0,
                    kernarg_bytes: 0,
                    bindings: Vec::new(),
                }));
                Ok(())
            }
        }
    }

    /// Appends one launch, checked against its kernel's kernarg layout
    /// ([`check_launch_with_layout`]).
    ///
    /// # Errors
    /// [`RecordError::NotOpen`], [`RecordError::CapacityExceeded`], [`RecordError::Launch`] or
    /// [`RecordError::KernargTotal`] (each poisons), or [`RecordError::Poisoned`].
    pub fn record(&mut self, launch: LaunchRecord, layout: &KernargLayout) -> Result<(), RecordError> {
        let result = match &mut self.state {
            State::Poisoned(first) => return Err(poisoned(first)),
            State::Idle => Err(RecordError::NotOpen { operation: Operation::Record }),
            State::Open(capture) => capture.record(launch, layout, self.capacity_launches),
        };
        result.map_err(|e| self.poison(e))
    }

    /// Appends one launch as [`Recorder::record`] does, with the kernarg arguments its owner
    /// declares to follow the position ([`DeclaredArg`]): each becomes a binding of this launch,
    /// named as declared, whose rule must give the value the launch passes at the capture's
    /// position. The finished tape carries them.
    ///
    /// # Errors
    /// As [`Recorder::record`], and [`RecordError::Declared`] (poisons) for a declaration that
    /// names no 4-byte argument, holds a grid rule, or disagrees with the launch.
    pub fn record_declared(
        &mut self,
        launch: LaunchRecord,
        layout: &KernargLayout,
        declared: &[DeclaredArg<'_>],
    ) -> Result<(), RecordError> {
        let result = match &mut self.state {
            State::Poisoned(first) => return Err(poisoned(first)),
            State::Idle => Err(RecordError::NotOpen { operation: Operation::Record }),
            State::Open(capture) => {
                let index = capture.launches.len();
                let checked = check_launch_with_layout(&launch, layout)
                    .map_err(|error| RecordError::Launch { index, error })
                    .and_then(|()| capture.declare(index, &launch, layout, declared));
                checked.and_then(|bindings| {
                    capture.record(launch, layout, self.capacity_launches)?;
                    capture.bindings.extend(bindings);
                    Ok(())
                })
            }
        };
        result.map_err(|e| self.poison(e))
    }

    /// Refuses the next launch of the open capture, whose declared effects leave out a range
    /// its kernel declares (found by the recording side with [`crate::coverage::uncovered`]):
    /// poisons the recorder with [`RecordError::Uncovered`], naming the kernel and argument.
    ///
    /// # Errors
    /// The [`RecordError::Uncovered`] it poisoned with; [`RecordError::NotOpen`] without an
    /// open capture; [`RecordError::Poisoned`] when already poisoned.
    pub fn refuse_uncovered(&mut self, kernel: &str, argument: &str, uncovered: Uncovered) -> Result<(), RecordError> {
        let error = match &self.state {
            State::Poisoned(first) => return Err(poisoned(first)),
            State::Idle => RecordError::NotOpen { operation: Operation::Record },
            State::Open(capture) => RecordError::Uncovered {
                index: capture.launches.len(),
                kernel: cut_name(kernel),
                argument: cut_name(argument),
                uncovered,
            },
        };
        Err(self.poison(error))
    }

    /// Counts one launch deliberately kept off the tape, under `name` (the token embedding, ...).
    ///
    /// # Errors
    /// [`RecordError::NotOpen`] or [`RecordError::External`] (each poisons), or
    /// [`RecordError::Poisoned`].
    pub fn record_external(&mut self, name: &str) -> Result<(), RecordError> {
        let result = match &mut self.state {
            State::Poisoned(first) => return Err(poisoned(first)),
            State::Idle => Err(RecordError::NotOpen { operation: Operation::RecordExternal }),
            State::Open(capture) => capture.record_external(name).map_err(RecordError::External),
        };
        result.map_err(|e| self.poison(e))
    }

    /// Closes the capture into a tape whose bindings are the declared ones
    /// ([`Recorder::record_declared`]), none when nothing was declared.
    ///
    /// # Errors
    /// [`RecordError::NotOpen`] or [`RecordError::Tape`] (an empty capture, or declarations the
    /// tape refuses: duplicate names, overlapping words; each poisons), or
    /// [`RecordError::Poisoned`].
    pub fn finish(&mut self) -> Result<Tape, RecordError> {
        let capture = match core::mem::replace(&mut self.state, State::Idle) {
            State::Poisoned(first) => {
                let error = poisoned(&first);
                self.state = State::Poisoned(first);
                return Err(error);
            }
            State::Idle => return Err(self.poison(RecordError::NotOpen { operation: Operation::Finish })),
            State::Open(capture) => *capture,
        };
        Tape::from_parts(capture.position, capture.launches, capture.external.into_iter().collect(), capture.bindings)
            .map_err(|e| self.poison(RecordError::Tape(e)))
    }

    /// Drops any capture and any poison: the recorder is as new.
    pub fn reset(&mut self) {
        self.state = State::Idle;
    }

    /// Poisons the recorder with `error` and returns it.
    fn poison(&mut self, error: RecordError) -> RecordError {
        assert!(!matches!(error, RecordError::Poisoned { .. }), "a Poisoned error never poisons");
        self.state = State::Poisoned(error.clone());
        error
    }
}

/// A declared name as messages show it: at most 64 characters.
fn cut_name(name: &str) -> String {
    match name.char_indices().nth(64) {
        None => String::from(name),
        Some((at, _)) => String::from(&name[..at]),
    }
}

fn poisoned(first: &RecordError) -> RecordError {
    RecordError::Poisoned { first: Box::new(first.clone()) }
}
