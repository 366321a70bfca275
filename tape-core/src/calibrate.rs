//! Calibration: the dynamic bindings of a step, derived from two recordings of it.
//!
//! Record the same decode step at two positions `p0 < p1` ([`Sample`]s). Everything that does not
//! follow the position must be byte-identical between the two; everything that differs must be
//! explained by a [`BindingKind`] that reproduces both samples. [`calibrate`] checks this per
//! launch, in launch order, and returns the first violation as a [`CalibrationError`].
//!
//! # Rules
//! Per launch, in this order:
//! 1. **Shape** — same artifact, wave size, LDS, work-group size, kernarg length (at most
//!    [`KERNARG_BYTES_MAX`]) and pointer count (at most [`POINTERS_MAX`]).
//! 2. **Pointers** — slot by slot the same `kernarg_offset`, the slot's 8 bytes inside the blob,
//!    and the same resolved target (allocation and offset); a different target is a
//!    [`CalibrationError::MovedPointer`].
//! 3. **Effects** — identical: both [`Effects::Unknown`], or the same [`Effect`](crate::record::Effect)s in the same
//!    order. Effects whose extent follows the position (a KV range that grows) are rejected
//!    here; the recording must declare them over the prepared maximum so they do not move.
//! 4. **Kernarg words** — the blob is compared per aligned little-endian `u32` word. An equal word
//!    is immutable. A differing word that overlaps a pointer slot is a
//!    [`CalibrationError::MovedPointer`]. Any other differing word must satisfy
//!    `b_word - a_word == p1 - p0`, and becomes `KernargU32 { offset, addend: a_word - p0 }`
//!    (so `a_word = p0 + addend`, `b_word = p1 + addend`). A differing word that does not
//!    satisfy it but equals, at both positions, the launch's grid in work-groups on an axis that
//!    rule 5 binds (a code-object v5 `hidden_block_count_{x,y,z}`) becomes
//!    `KernargGridWorkgroups { offset, axis, .. }` with that axis's grid binding's `addend`,
//!    `divisor` and `max_workgroups` (axes tried x, y, z; the first that matches wins). A word that
//!    fits neither is a [`CalibrationError::InconsistentDelta`]. **Ambiguity**: a word that fits
//!    the position rule is always a `KernargU32`, even if it also equals a grid (for example a
//!    grid rule of divisor 1 and the same addend, or a grid that happens to grow by exactly
//!    `p1 - p0` work-groups between the samples): the position rule is tried first, so adding
//!    grid rules never changes how a position word is bound. A hidden block count bound that way
//!    is a `KernargU32`, and the lowering then refuses the launch's grid binding (fail closed);
//!    calibrate from positions where the grid does not grow by `p1 - p0`. A grid rule that rule
//!    5 rejects explains no word (rule 5's error is reported after the kernarg words, as
//!    before). Because `p0 != p1`, a position word always
//!    differs, so no binding hides behind an equal word. Differing bytes in a tail shorter than a
//!    word are [`CalibrationError::ImmutableBytesDiffer`].
//! 5. **Grid** — per axis. An axis without caller-supplied [`GridRule`]s must have the same grid
//!    in work-items in both samples. One pair of samples cannot determine `(addend, divisor)`,
//!    so an axis that has rules is taken to follow the position: exactly one distinct
//!    `(addend, divisor)` among its rules must reproduce the recorded work-group counts
//!    (`ceil((p + addend) / divisor)`) at both positions — none is
//!    [`CalibrationError::UnexplainedGrid`], two different ones
//!    [`CalibrationError::AmbiguousGrid`] — and both samples' grids must be whole work-groups,
//!    because replay writes `work-groups × work-group size` work-items.
//!
//! Every binding must produce a value at `max_position`, the largest position the plan is
//! prepared for; a grid binding's `max_workgroups` is its value there (`ceil` of a non-decreasing
//! argument, so it bounds every position up to `max_position`).
//!
//! # Declared bindings
//! [`calibrate`] infers the position words; [`calibrate_declared`], the mode the engine captures
//! in, is given them: the launch's owner declared each word that follows the position (a
//! [`DeclaredArg`](crate::recorder::DeclaredArg), recorded as a binding of the tape), and rule 4
//! becomes:
//! - a declared word must lie on a whole word off the pointer slots, and its rule must give the
//!   word recorded at `p0` **and** at `p1` ([`CalibrationError::DeclarationDisagrees`]), whether
//!   the two differ or not: a `max(0, position + A)` word is 0 in both samples while both
//!   positions are below `-A`, and only the declaration says it will move;
//! - a differing word without a declaration is refused by name ([`CalibrationError::Undeclared`],
//!   with the launch, its kernel and the two values), even when it fits `position + A`, unless
//!   it is the hidden work-group count of an axis rule 5 binds (bound as in [`calibrate`]).
//!
//! Calibration confirms the declarations; it does not replace them. The declared bindings keep
//! their names, in launch order then offset order among the launch's other bindings.
//!
//! # Names
//! Deterministic and unique within the step: `launch{i}.kernarg@{offset}`,
//! `launch{i}.kernarg@{offset}.grid.{x|y|z}` and `launch{i}.grid.{x|y|z}` ([`kernarg_name`],
//! [`kernarg_grid_name`], [`grid_name`]). Bindings are returned by launch, then kernarg words by
//! offset, then grid axes x, y, z.
//!
//! # Bounds
//! At most [`LAUNCHES_MAX`] launches, [`GRID_RULES_MAX`] rules and [`BINDINGS_MAX`] bindings;
//! work is linear in the total kernarg bytes plus, per differing word, the launch's pointer
//! count.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::ops::Range;

use crate::binding::{Binding, BindingKind};
use crate::record::{Effects, LaunchRecord};

mod error;

/// Most launches per sample (the dependency derivation's limit).
pub const LAUNCHES_MAX: usize = crate::deps::LAUNCHES_MAX;
/// Longest kernarg blob, bytes. HIP caps explicit arguments at 4 KiB; this leaves room for hidden
/// arguments and padding while keeping every offset far inside `u32`.
pub const KERNARG_BYTES_MAX: usize = 64 * 1024;
/// Most pointer slots per launch: as many 8-byte slots as fit in the longest blob.
pub const POINTERS_MAX: usize = KERNARG_BYTES_MAX / POINTER_BYTES;
/// Most grid rules per call: one per axis of every launch.
pub const GRID_RULES_MAX: usize = 3 * LAUNCHES_MAX;
/// Most bindings one step may have. A decode step binds a handful of values per attention
/// launch; thousands means the two samples are not the same step.
pub const BINDINGS_MAX: usize = 4096;

const POINTER_BYTES: usize = 8;
const WORD_BYTES: usize = 4;
const AXIS_NAMES: [&str; 3] = ["x", "y", "z"];

/// One recording of the step.
#[derive(Clone, Copy, Debug)]
pub struct Sample<'a> {
    /// The decode position it was recorded at.
    pub position: u32,
    /// Its launches, in order.
    pub launches: &'a [LaunchRecord],
}

/// A caller's claim that a launch's grid on one axis follows the position as
/// `ceil((position + addend) / divisor)` work-groups (typically derived from the kernel: a
/// divisor of rows per work-group).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GridRule {
    /// Index of the launch.
    pub launch: usize,
    /// 0, 1 or 2.
    pub axis: u8,
    /// Added to the position.
    pub addend: i64,
    /// Positive.
    pub divisor: u32,
}

pub use error::{CalibrationError, PointerValue};

/// Name of the binding of the kernarg word at `offset` of launch `launch`.
#[must_use]
pub fn kernarg_name(launch: usize, offset: u32) -> String {
    format!("launch{launch}.kernarg@{offset}")
}

/// Name of the binding of the kernarg word at `offset` of launch `launch` that follows its grid on
/// `axis` (`x`, `y`, `z`; `axis{n}` above 2).
#[must_use]
pub fn kernarg_grid_name(launch: usize, offset: u32, axis: u8) -> String {
    match AXIS_NAMES.get(usize::from(axis)) {
        Some(name) => format!("launch{launch}.kernarg@{offset}.grid.{name}"),
        None => format!("launch{launch}.kernarg@{offset}.grid.axis{axis}"),
    }
}

/// Name of the binding of launch `launch`'s grid on `axis` (`x`, `y`, `z`; `axis{n}` above 2).
#[must_use]
pub fn grid_name(launch: usize, axis: u8) -> String {
    match AXIS_NAMES.get(usize::from(axis)) {
        Some(name) => format!("launch{launch}.grid.{name}"),
        None => format!("launch{launch}.grid.axis{axis}"),
    }
}

/// Derives the bindings that turn sample `a` into sample `b` (see the module documentation for
/// the exact rules), valid for positions up to `max_position`.
///
/// # Errors
/// The first [`CalibrationError`] found, launches in order.
pub fn calibrate(
    a: Sample<'_>,
    b: Sample<'_>,
    grid_rules: &[GridRule],
    max_position: u32,
) -> Result<Vec<Binding>, CalibrationError> {
    calibrate_with(a, b, None, grid_rules, max_position)
}

/// As [`calibrate`], with the step's kernarg words declared by their owners instead of inferred:
/// the mode the engine captures in (see the module documentation, *Declared bindings*).
///
/// `declared` are kernarg bindings ([`BindingKind::KernargU32`] or
/// [`BindingKind::KernargU32Clamped`], as the recorder makes them from
/// [`DeclaredArg`](crate::recorder::DeclaredArg)s). Each must give, at both positions, the word
/// recorded there (equal or not) and have a value at `max_position`; it is returned under its
/// own name. A word that differs between the samples without a declaration is refused
/// ([`CalibrationError::Undeclared`]) unless it is the hidden work-group count of a bound grid
/// axis, which the kernarg ABI implies (a [`BindingKind::KernargGridWorkgroups`], as in
/// [`calibrate`]).
///
/// # Errors
/// The first [`CalibrationError`] found, launches in order.
pub fn calibrate_declared(
    a: Sample<'_>,
    b: Sample<'_>,
    declared: &[Binding],
    grid_rules: &[GridRule],
    max_position: u32,
) -> Result<Vec<Binding>, CalibrationError> {
    calibrate_with(a, b, Some(declared), grid_rules, max_position)
}

fn calibrate_with(
    a: Sample<'_>,
    b: Sample<'_>,
    declared: Option<&[Binding]>,
    grid_rules: &[GridRule],
    max_position: u32,
) -> Result<Vec<Binding>, CalibrationError> {
    let positions = Positions { p0: a.position, p1: b.position, max: max_position };
    if positions.p0 >= positions.p1 {
        return Err(CalibrationError::PositionsNotIncreasing { p0: positions.p0, p1: positions.p1 });
    }
    if max_position < positions.p1 {
        return Err(CalibrationError::MaxPositionBelowSample { max_position, p1: positions.p1 });
    }
    let launches = a.launches.len();
    if launches != b.launches.len() {
        return Err(CalibrationError::LaunchCountDiffers { a: launches, b: b.launches.len() });
    }
    if launches > LAUNCHES_MAX {
        return Err(CalibrationError::TooManyLaunches { launches, limit: LAUNCHES_MAX });
    }
    let rules = rules_by_launch(grid_rules, launches)?;
    let declared = declared.map(|d| declarations_by_launch(d, launches)).transpose()?;
    let mut out = Bindings(Vec::new());
    for (launch, ((ra, rb), rules)) in a.launches.iter().zip(b.launches).zip(&rules).enumerate() {
        let pair = Pair { launch, a: ra, b: rb };
        pair.check_shape()?;
        pair.check_pointers()?;
        pair.check_effects()?;
        let grids = pair.grid_bindings(rules, positions);
        let words = match &declared {
            None => Words::Inferred,
            Some(by_launch) => Words::Declared(by_launch.get(launch).map_or(&[][..], Vec::as_slice)),
        };
        pair.kernarg_bindings(positions, &grids, words, &mut out)?;
        for (axis, grid) in (0u8..3).zip(grids) {
            if let Some(kind) = grid? {
                out.push(launch, grid_name(launch, axis), kind)?;
            }
        }
    }
    Ok(out.0)
}

/// How rule 4 binds the kernarg words of one launch.
#[derive(Clone, Copy)]
enum Words<'d> {
    /// A differing word that moves with the position is a `KernargU32` (as [`calibrate`] says).
    Inferred,
    /// The launch's declared bindings, by offset; any other differing word is refused (but a
    /// hidden grid word).
    Declared(&'d [&'d Binding]),
}

/// The declarations grouped by launch, sorted by offset, checked: kernarg words on 4-byte
/// boundaries, launches that exist, no word declared twice.
fn declarations_by_launch(declared: &[Binding], launches: usize) -> Result<Vec<Vec<&Binding>>, CalibrationError> {
    if declared.len() > BINDINGS_MAX {
        return Err(CalibrationError::TooManyBindings { limit: BINDINGS_MAX });
    }
    let bad = |b: &Binding, problem: String| CalibrationError::BadDeclaration { name: b.name.clone(), problem };
    let mut grouped: Vec<Vec<&Binding>> = alloc::vec![Vec::new(); launches];
    for binding in declared {
        let offset = match binding.kind {
            BindingKind::KernargU32 { offset, .. } | BindingKind::KernargU32Clamped { offset, .. } => offset,
            kind => {
                return Err(bad(binding, format!("{kind:?} is not a declared kernarg word (grids follow grid rules)")));
            }
        };
        if offset % 4 != 0 {
            return Err(bad(binding, format!("kernarg offset {offset} is not on a 4-byte word")));
        }
        let slot = usize::try_from(binding.launch).ok().and_then(|i| grouped.get_mut(i)).ok_or_else(|| {
            bad(binding, format!("launch {} does not exist (the samples have {launches})", binding.launch))
        })?;
        slot.push(binding);
    }
    for list in &mut grouped {
        list.sort_by_key(|b| b.kind.kernarg_offset());
        if let Some(pair) = list.windows(2).find(|p| p[0].kind.kernarg_offset() == p[1].kind.kernarg_offset()) {
            return Err(bad(pair[1], format!("declares the same word as {:?}", pair[0].name)));
        }
    }
    Ok(grouped)
}

/// The two sample positions and the prepared maximum.
#[derive(Clone, Copy)]
struct Positions {
    p0: u32,
    p1: u32,
    max: u32,
}

/// The result under construction, bounded by [`BINDINGS_MAX`].
struct Bindings(Vec<Binding>);

impl Bindings {
    fn push(&mut self, launch: usize, name: String, kind: BindingKind) -> Result<(), CalibrationError> {
        if self.0.len() >= BINDINGS_MAX {
            return Err(CalibrationError::TooManyBindings { limit: BINDINGS_MAX });
        }
        self.0.push(Binding { name, launch: small_u32(launch), kind });
        Ok(())
    }
}

/// `value` as `u32`. INVARIANT: only called on launch indices (at most [`LAUNCHES_MAX`]) and
/// kernarg offsets (at most [`KERNARG_BYTES_MAX`]), both far below `u32::MAX`, so the saturation
/// never happens.
fn small_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// Validates the rules and groups them by launch, keeping their order.
fn rules_by_launch(grid_rules: &[GridRule], launches: usize) -> Result<Vec<Vec<GridRule>>, CalibrationError> {
    if grid_rules.len() > GRID_RULES_MAX {
        return Err(CalibrationError::TooManyGridRules { rules: grid_rules.len(), limit: GRID_RULES_MAX });
    }
    let mut grouped = alloc::vec![Vec::new(); launches];
    for (rule, r) in grid_rules.iter().enumerate() {
        if r.axis > 2 || r.divisor == 0 {
            return Err(CalibrationError::MalformedGridRule { rule, axis: r.axis, divisor: r.divisor });
        }
        let Some(slot) = grouped.get_mut(r.launch) else {
            return Err(CalibrationError::GridRuleLaunchOutOfRange { rule, launch: r.launch, launches });
        };
        slot.push(*r);
    }
    Ok(grouped)
}

/// One launch in both samples.
struct Pair<'a> {
    launch: usize,
    a: &'a LaunchRecord,
    b: &'a LaunchRecord,
}

impl Pair<'_> {
    /// Rule 1: everything that must be equal as a whole.
    fn check_shape(&self) -> Result<(), CalibrationError> {
        let (launch, a, b) = (self.launch, self.a, self.b);
        if a.artifact != b.artifact {
            let (a, b) = (Box::new(a.artifact.clone()), Box::new(b.artifact.clone()));
            return Err(CalibrationError::ArtifactDiffers { launch, a, b });
        }
        if a.wave_size != b.wave_size {
            return Err(CalibrationError::WaveSizeDiffers { launch, a: a.wave_size, b: b.wave_size });
        }
        if a.lds != b.lds {
            return Err(CalibrationError::LdsDiffers { launch, a: a.lds, b: b.lds });
        }
        let (wa, wb) = (a.geometry.workgroup_work_items, b.geometry.workgroup_work_items);
        if wa != wb {
            return Err(CalibrationError::WorkgroupSizeDiffers { launch, a: wa, b: wb });
        }
        if a.kernarg.len() != b.kernarg.len() {
            return Err(CalibrationError::KernargLengthDiffers { launch, a: a.kernarg.len(), b: b.kernarg.len() });
        }
        if a.kernarg.len() > KERNARG_BYTES_MAX {
            let len_bytes = a.kernarg.len();
            return Err(CalibrationError::KernargTooLong { launch, len_bytes, limit: KERNARG_BYTES_MAX });
        }
        if a.pointers.len() != b.pointers.len() {
            return Err(CalibrationError::PointerCountDiffers { launch, a: a.pointers.len(), b: b.pointers.len() });
        }
        if a.pointers.len() > POINTERS_MAX {
            return Err(CalibrationError::TooManyPointers { launch, pointers: a.pointers.len(), limit: POINTERS_MAX });
        }
        Ok(())
    }

    /// Rule 2: same slots, inside the blob, same targets.
    fn check_pointers(&self) -> Result<(), CalibrationError> {
        let launch = self.launch;
        let kernarg_len = self.a.kernarg.len();
        for (index, (pa, pb)) in self.a.pointers.iter().zip(&self.b.pointers).enumerate() {
            let kernarg_offset = pa.kernarg_offset;
            if kernarg_offset != pb.kernarg_offset {
                return Err(CalibrationError::PointerSlotDiffers {
                    launch,
                    index,
                    a: kernarg_offset,
                    b: pb.kernarg_offset,
                });
            }
            if slot_range(kernarg_offset, kernarg_len).is_none() {
                return Err(CalibrationError::PointerOutsideKernarg { launch, kernarg_offset, kernarg_len });
            }
            if (pa.allocation, pa.offset_bytes) != (pb.allocation, pb.offset_bytes) {
                let a = PointerValue::Resolved { allocation: pa.allocation, offset_bytes: pa.offset_bytes };
                let b = PointerValue::Resolved { allocation: pb.allocation, offset_bytes: pb.offset_bytes };
                return Err(CalibrationError::MovedPointer { launch, kernarg_offset, a, b });
            }
        }
        Ok(())
    }

    /// Rule 3: identical effects.
    fn check_effects(&self) -> Result<(), CalibrationError> {
        let launch = self.launch;
        let (ea, eb) = match (&self.a.effects, &self.b.effects) {
            (Effects::Unknown, Effects::Unknown) => return Ok(()),
            (Effects::Known(ea), Effects::Known(eb)) if ea.len() == eb.len() => (ea, eb),
            (ea, eb) => {
                return Err(CalibrationError::EffectCountDiffers { launch, a: known_len(ea), b: known_len(eb) });
            }
        };
        match ea.iter().zip(eb).enumerate().find(|(_, (x, y))| x != y) {
            Some((index, (&a, &b))) => Err(CalibrationError::EffectDiffers { launch, index, a, b }),
            None => Ok(()),
        }
    }

    /// Rule 4: every differing word is a position word; the tail is identical.
    ///
    /// `grids` is rule 5's result per axis; a word that is not a position word may follow an
    /// axis bound there.
    fn kernarg_bindings(
        &self,
        positions: Positions,
        grids: &[Result<Option<BindingKind>, CalibrationError>; 3],
        words: Words<'_>,
        out: &mut Bindings,
    ) -> Result<(), CalibrationError> {
        let launch = self.launch;
        let (words_a, tail_a) = self.a.kernarg.as_chunks::<WORD_BYTES>();
        let (words_b, tail_b) = self.b.kernarg.as_chunks::<WORD_BYTES>();
        if let Words::Declared(declared) = words {
            self.check_declarations(declared, words_a.len(), positions)?;
        }
        let mut next_declared = 0;
        for (index, (wa, wb)) in words_a.iter().zip(words_b).enumerate() {
            let start = index * WORD_BYTES;
            let (offset, a, b) = (small_u32(start), u32::from_le_bytes(*wa), u32::from_le_bytes(*wb));
            if let Words::Declared(declared) = words
                && let Some(binding) = declared.get(next_declared).filter(|d| d.kind.kernarg_offset() == Some(offset))
            {
                next_declared += 1;
                out.push(launch, binding.name.clone(), binding.kind)?;
                continue;
            }
            if wa == wb {
                continue;
            }
            self.check_not_pointer(start..start + WORD_BYTES)?;
            let (p0, p1) = (positions.p0, positions.p1);
            if let Words::Declared(_) = words {
                let (axis, kind) = grid_word(grids, offset, (a, b), positions).ok_or_else(|| {
                    let kernel = self.a.artifact.symbol.clone();
                    CalibrationError::Undeclared { launch, kernel, offset, a, b, p0, p1 }
                })?;
                out.push(launch, kernarg_grid_name(launch, offset, axis), kind)?;
                continue;
            }
            if i64::from(b) - i64::from(a) != i64::from(p1) - i64::from(p0) {
                let (axis, kind) = grid_word(grids, offset, (a, b), positions)
                    .ok_or(CalibrationError::InconsistentDelta { launch, offset, a, b, p0, p1 })?;
                out.push(launch, kernarg_grid_name(launch, offset, axis), kind)?;
                continue;
            }
            let kind = BindingKind::KernargU32 { offset, addend: i64::from(a) - i64::from(p0) };
            kind.value_at(positions.max).map_err(|error| CalibrationError::UnreachableMaximum {
                launch,
                kind,
                max_position: positions.max,
                error,
            })?;
            out.push(launch, kernarg_name(launch, offset), kind)?;
        }
        let differing = || tail_a.iter().zip(tail_b).enumerate().filter(|(_, (x, y))| x != y).map(|(i, _)| i);
        if let (Some(first), Some(last)) = (differing().next(), differing().next_back()) {
            let base = words_a.len() * WORD_BYTES;
            let range = base + first..base + last + 1;
            self.check_not_pointer(range.clone())?;
            return Err(CalibrationError::ImmutableBytesDiffer {
                launch,
                range: small_u32(range.start)..small_u32(range.end),
            });
        }
        Ok(())
    }

    /// Every declaration of this launch (sorted by offset) lies on a whole word of the blob,
    /// off the pointer slots, gives the recorded word at both positions and has a value at the
    /// maximum.
    fn check_declarations(
        &self,
        declared: &[&Binding],
        words: usize,
        positions: Positions,
    ) -> Result<(), CalibrationError> {
        let launch = self.launch;
        for binding in declared {
            let bad = |problem: String| CalibrationError::BadDeclaration { name: binding.name.clone(), problem };
            let offset = binding.kind.kernarg_offset().unwrap_or(u32::MAX);
            let start = usize::try_from(offset).unwrap_or(usize::MAX);
            if start / WORD_BYTES >= words {
                let len = self.a.kernarg.len();
                return Err(bad(format!("kernarg offset {offset} is not a whole word of the {len}-byte blob")));
            }
            if let Some(p) = self.a.pointers.iter().find(|p| {
                slot_range(p.kernarg_offset, self.a.kernarg.len())
                    .is_some_and(|slot| slot.start < start + WORD_BYTES && start < slot.end)
            }) {
                return Err(bad(format!("kernarg offset {offset} lies in the pointer at {}", p.kernarg_offset)));
            }
            for (position, blob) in [(positions.p0, &self.a.kernarg), (positions.p1, &self.b.kernarg)] {
                let recorded = u32::from_le_bytes([blob[start], blob[start + 1], blob[start + 2], blob[start + 3]]);
                let bound = binding.kind.value_at(position).ok();
                if bound != Some(recorded) {
                    let rule = binding
                        .kind
                        .rule(crate::binding::DimUnit::Workgroups)
                        .map_or_else(|e| e.to_string(), |r| r.to_string());
                    let name = binding.name.clone();
                    return Err(CalibrationError::DeclarationDisagrees {
                        launch,
                        name,
                        rule,
                        position,
                        bound,
                        recorded,
                    });
                }
            }
            let kind = binding.kind;
            kind.value_at(positions.max).map_err(|error| CalibrationError::UnreachableMaximum {
                launch,
                kind,
                max_position: positions.max,
                error,
            })?;
        }
        Ok(())
    }

    /// A differing byte range that overlaps a pointer slot is a moved pointer.
    fn check_not_pointer(&self, bytes: Range<usize>) -> Result<(), CalibrationError> {
        let kernarg_len = self.a.kernarg.len();
        for p in &self.a.pointers {
            let Some(slot) = slot_range(p.kernarg_offset, kernarg_len) else { continue };
            if slot.start < bytes.end && bytes.start < slot.end {
                let a = PointerValue::Bytes(slot_value(&self.a.kernarg, slot.clone()));
                let b = PointerValue::Bytes(slot_value(&self.b.kernarg, slot));
                return Err(CalibrationError::MovedPointer {
                    launch: self.launch,
                    kernarg_offset: p.kernarg_offset,
                    a,
                    b,
                });
            }
        }
        Ok(())
    }

    /// Rule 5: per axis, equal without rules, or explained by exactly one rule. The result per
    /// axis: the grid binding, `None` for an axis without rules, or why the axis is rejected.
    fn grid_bindings(
        &self,
        rules: &[GridRule],
        positions: Positions,
    ) -> [Result<Option<BindingKind>, CalibrationError>; 3] {
        [0u8, 1, 2].map(|axis| self.grid_binding(rules, axis, positions))
    }

    /// Rule 5 on one axis.
    fn grid_binding(
        &self,
        rules: &[GridRule],
        axis: u8,
        positions: Positions,
    ) -> Result<Option<BindingKind>, CalibrationError> {
        let launch = self.launch;
        let (ga, gb) = (self.a.geometry, self.b.geometry);
        let (wga, wgb) = (ga.grid_workgroups(), gb.grid_workgroups());
        let x = usize::from(axis);
        let (items_a, items_b) = (ga.grid_work_items[x], gb.grid_work_items[x]);
        let unexplained = CalibrationError::UnexplainedGrid {
            launch,
            axis,
            a: wga[x],
            b: wgb[x],
            a_work_items: items_a,
            b_work_items: items_b,
        };
        let mut candidates = rules.iter().filter(|r| r.axis == axis).peekable();
        if candidates.peek().is_none() {
            if items_a != items_b {
                return Err(unexplained);
            }
            return Ok(None);
        }
        let rule = explaining_rule(launch, axis, candidates, (wga[x], wgb[x]), positions)?.ok_or(unexplained)?;
        let workgroup = ga.workgroup_work_items[x];
        for (work_items, workgroups) in [(items_a, wga[x]), (items_b, wgb[x])] {
            if workgroup == 0 || u64::from(workgroups) * u64::from(workgroup) != u64::from(work_items) {
                return Err(CalibrationError::GridNotWholeWorkgroups { launch, axis, work_items, workgroup });
            }
        }
        let unbounded =
            BindingKind::GridAxis { axis, addend: rule.addend, divisor: rule.divisor, max_workgroups: u32::MAX };
        let max_workgroups = unbounded.value_at(positions.max).map_err(|error| {
            CalibrationError::UnreachableMaximum { launch, kind: unbounded, max_position: positions.max, error }
        })?;
        let kind = BindingKind::GridAxis { axis, addend: rule.addend, divisor: rule.divisor, max_workgroups };
        debug_assert_eq!(kind.value_at(positions.p0), Ok(wga[x]));
        debug_assert_eq!(kind.value_at(positions.p1), Ok(wgb[x]));
        Ok(Some(kind))
    }
}

/// The first axis (x, y, z) whose grid binding in `grids` gives the word's values `words` at both
/// positions, and the word's binding that follows it.
fn grid_word(
    grids: &[Result<Option<BindingKind>, CalibrationError>; 3],
    offset: u32,
    words: (u32, u32),
    positions: Positions,
) -> Option<(u8, BindingKind)> {
    grids.iter().find_map(|grid| {
        let Ok(Some(BindingKind::GridAxis { axis, addend, divisor, max_workgroups })) = *grid else { return None };
        let kind = BindingKind::KernargGridWorkgroups { offset, axis, addend, divisor, max_workgroups };
        (kind.value_at(positions.p0) == Ok(words.0) && kind.value_at(positions.p1) == Ok(words.1))
            .then_some((axis, kind))
    })
}

/// The single distinct rule among `candidates` that gives `workgroups` at the two positions;
/// `None` when none does.
fn explaining_rule<'r>(
    launch: usize,
    axis: u8,
    candidates: impl Iterator<Item = &'r GridRule>,
    workgroups: (u32, u32),
    positions: Positions,
) -> Result<Option<GridRule>, CalibrationError> {
    let mut found: Option<GridRule> = None;
    for rule in candidates {
        let kind = BindingKind::GridAxis { axis, addend: rule.addend, divisor: rule.divisor, max_workgroups: u32::MAX };
        if kind.value_at(positions.p0) != Ok(workgroups.0) || kind.value_at(positions.p1) != Ok(workgroups.1) {
            continue;
        }
        match found {
            None => found = Some(*rule),
            Some(first) if (first.addend, first.divisor) == (rule.addend, rule.divisor) => {}
            Some(first) => return Err(CalibrationError::AmbiguousGrid { launch, axis, first, second: *rule }),
        }
    }
    Ok(found)
}

/// The byte range of the 8-byte pointer slot at `kernarg_offset`, if it lies inside the blob.
fn slot_range(kernarg_offset: u32, kernarg_len: usize) -> Option<Range<usize>> {
    let start = usize::try_from(kernarg_offset).ok()?;
    let end = start.checked_add(POINTER_BYTES)?;
    (end <= kernarg_len).then_some(start..end)
}

/// The little-endian value of a slot returned by [`slot_range`] (0 if it does not fit, which
/// [`Pair::check_pointers`] already excluded).
fn slot_value(kernarg: &[u8], slot: Range<usize>) -> u64 {
    kernarg.get(slot).and_then(|s| <[u8; POINTER_BYTES]>::try_from(s).ok()).map_or(0, u64::from_le_bytes)
}

/// The effect count, `None` for [`Effects::Unknown`].
fn known_len(effects: &Effects) -> Option<usize> {
    match effects {
        Effects::Known(list) => Some(list.len()),
        Effects::Unknown => None,
    }
}
