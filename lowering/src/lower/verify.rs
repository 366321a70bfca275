//! Checking a lowered IB against its tape, independently of the builder.
//!
//! The IB is decoded with [`pm4_encoding::Decoder`] and walked like a command processor would:
//! `SET_SH_REG` values go into a register shadow that starts empty (an IB may not rely on state
//! left by an earlier one), and at each `DISPATCH_DIRECT` the shadow and the packet are compared
//! with what the tape and the kernel descriptor require. Expected values are re-derived here from
//! the launch record, the descriptor and the register definitions of `pm4-encoding`:
//!
//! - `COMPUTE_PGM_LO/HI` = entry VA `>> 8` / `>> 40`;
//! - `COMPUTE_PGM_RSRC1`, `RSRC3` = the descriptor's; `RSRC2` = the descriptor's with `LDS_SIZE`
//!   holding the recorded static + dynamic LDS;
//! - `COMPUTE_NUM_THREAD_*`: `NUM_THREAD_FULL` = work-group size, `NUM_THREAD_PARTIAL` = grid mod
//!   work-group size;
//! - `COMPUTE_USER_DATA_0..RSRC2.USER_SGPR`: the launch's kernarg VA at the descriptor's kernarg
//!   SGPRs, 0 everywhere else;
//! - `DIM_*`: work-groups on gfx10.3/gfx11, work-items on gfx12 (`USE_THREAD_DIMENSIONS`); the
//!   initiator's `COMPUTE_SHADER_EN`, `PARTIAL_TG_EN` and `CS_W32_EN` from the record;
//! - a wait (`EVENT_WRITE CS_PARTIAL_FLUSH`) since the previous dispatch exactly when the launch is
//!   one of tape-core's boundaries, followed by an `ACQUIRE_MEM` with the consumer bits of
//!   [`pm4_encoding::policy::consumer_acquire_gcr`]; a system acquire before the first dispatch and a wait plus
//!   system acquire after the last.
//!
//! `NOP`s are padding and ignored; anything else in the IB is refused, and the [`LoweredIb`]'s offsets, boundaries and patch
//! sites must agree with the decoded words.

use std::collections::BTreeMap;

use kernarg_abi::UserSgprLayout;
use kernarg_abi::sgpr::UserSgpr;
use pm4_encoding::packet::{DispatchDirect, EventType, GcrCntl, Packet};
use pm4_encoding::regs::{self, RegisterInfo};
use pm4_encoding::{DecodeError, Decoder, Family};
use tape_core::deps::{self, DepsError};
use tape_core::tape::Tape;
use tape_core::{ArtifactId, LaunchRecord};

use super::{LoweredIb, patch_sites};
use hal::KernelSlot;

/// Why a lowered IB does not match its tape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The IB is encoded for another family.
    #[error("the IB is for {found}, expected {expected}")]
    Family {
        /// Asked for.
        expected: Family,
        /// [`LoweredIb::family`].
        found: Family,
    },
    /// `kernarg_vas` does not hold one VA per launch.
    #[error("{vas} kernarg VAs for {launches} launches")]
    KernargVaCount {
        /// Launches of the tape.
        launches: usize,
        /// VAs given.
        vas: usize,
    },
    /// No loaded kernel for a launch's artifact.
    #[error("dispatch {dispatch}: no loaded kernel `{}`", artifact.symbol)]
    UnknownKernel {
        /// The launch.
        dispatch: usize,
        /// Its artifact.
        artifact: ArtifactId,
    },
    /// The dependency derivation refused the tape.
    #[error(transparent)]
    Deps(#[from] DepsError),
    /// The IB does not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// A packet the lowering never emits.
    #[error("dword {offset}: unexpected packet (header {header:#010x})")]
    UnexpectedPacket {
        /// Its dword offset.
        offset: usize,
        /// Its header word.
        header: u32,
    },
    /// No system acquire before the first dispatch.
    #[error("no system-scope ACQUIRE_MEM before the first dispatch")]
    MissingEntryAcquire,
    /// No wait and system acquire after the last dispatch.
    #[error("no wait and system-scope ACQUIRE_MEM after the last dispatch")]
    MissingTerminal,
    /// The IB holds a different number of dispatches than the tape has launches.
    #[error("{found} dispatches for {expected} launches")]
    DispatchCount {
        /// Launches.
        expected: usize,
        /// `DISPATCH_DIRECT` packets.
        found: usize,
    },
    /// A register the dispatch reads was never written in this IB.
    #[error("dispatch {dispatch}: {name} is not set")]
    RegisterNotSet {
        /// The dispatch.
        dispatch: usize,
        /// The register.
        name: &'static str,
    },
    /// `COMPUTE_PGM_LO/HI` do not point at the kernel's entry.
    #[error("dispatch {dispatch}: program address {found:#x}, the kernel's entry is {expected:#x}")]
    ProgramAddress {
        /// The dispatch.
        dispatch: usize,
        /// The entry VA.
        expected: u64,
        /// What PGM_LO/HI encode.
        found: u64,
    },
    /// A register holds the wrong value.
    #[error("dispatch {dispatch}: {name} is {found:#x}, expected {expected:#x}")]
    Register {
        /// The dispatch.
        dispatch: usize,
        /// The register.
        name: &'static str,
        /// Expected.
        expected: u32,
        /// Found.
        found: u32,
    },
    /// A user-data register holds the wrong value.
    #[error("dispatch {dispatch}: COMPUTE_USER_DATA_{register} is {found:x?}, expected {expected:#x}")]
    UserData {
        /// The dispatch.
        dispatch: usize,
        /// `n` of `COMPUTE_USER_DATA_n`.
        register: u8,
        /// Expected.
        expected: u32,
        /// Found (`None`: not set).
        found: Option<u32>,
    },
    /// The descriptor enables user SGPRs the lowering cannot provide.
    #[error("dispatch {dispatch}: the descriptor enables the {block} user SGPRs")]
    UnsupportedUserSgpr {
        /// The dispatch.
        dispatch: usize,
        /// The block.
        block: UserSgpr,
    },
    /// `DIM_X/Y/Z` disagree with the recorded geometry under the family's semantics.
    #[error("dispatch {dispatch}: dimensions {found:?}, expected {expected:?}")]
    Dimensions {
        /// The dispatch.
        dispatch: usize,
        /// Expected.
        expected: [u32; 3],
        /// Found.
        found: [u32; 3],
    },
    /// A `DISPATCH_INITIATOR` bit disagrees with the record or the family.
    #[error("dispatch {dispatch}: initiator {field} is {found}, expected {expected}")]
    Initiator {
        /// The dispatch.
        dispatch: usize,
        /// The field.
        field: &'static str,
        /// Expected.
        expected: u32,
        /// Found.
        found: u32,
    },
    /// A wait where tape-core puts none, or none where it puts one.
    #[error("dispatch {dispatch}: wait before it is {found}, tape-core's boundaries say {expected}")]
    Wait {
        /// The dispatch.
        dispatch: usize,
        /// Whether a wait belongs there.
        expected: bool,
        /// Whether there is one.
        found: bool,
    },
    /// A wait without the consumer acquire after it.
    #[error("dispatch {dispatch}: the wait before it has no consumer ACQUIRE_MEM")]
    MissingConsumerAcquire {
        /// The dispatch.
        dispatch: usize,
    },
    /// [`LoweredIb::dispatch_offsets`] or [`LoweredIb::boundaries`] disagree with the words.
    #[error("the lowered IB's dispatch offsets or boundaries disagree with its words")]
    Bookkeeping,
    /// A patch site that does not match its binding.
    #[error("patch site {binding} does not match the tape's binding")]
    PatchSite {
        /// Index of the binding (or of the site, when the counts differ).
        binding: usize,
    },
}

/// What one dispatch must look like, from the record and the descriptor.
struct Expected<'a> {
    index: usize,
    record: &'a LaunchRecord,
    slot: &'a KernelSlot,
    kernarg_va: u64,
}

/// The state of the walk between dispatches.
#[derive(Default)]
struct Walk {
    registers: BTreeMap<u32, u32>,
    flush: bool,
    consumer_acquire: bool,
    system_acquire_after_flush: bool,
    entry: bool,
    dispatches: Vec<usize>,
}

/// Checks `lowered` against `tape` on `family`: see the module documentation.
///
/// # Errors
/// [`VerifyError`] for the first mismatch, naming the dispatch index.
pub fn verify<'k>(
    lowered: &LoweredIb,
    tape: &Tape,
    family: Family,
    kernels: &dyn Fn(&ArtifactId) -> Option<&'k KernelSlot>,
    kernarg_vas: &[u64],
) -> Result<(), VerifyError> {
    if lowered.family != family {
        return Err(VerifyError::Family { expected: family, found: lowered.family });
    }
    let launches = tape.launches();
    if kernarg_vas.len() != launches.len() {
        return Err(VerifyError::KernargVaCount { launches: launches.len(), vas: kernarg_vas.len() });
    }
    let boundaries = deps::boundaries(launches)?;
    let mut walk = Walk::default();
    for item in Decoder::new(&lowered.words) {
        let decoded = item?;
        match decoded.packet {
            Packet::SetShReg(s) => {
                for (dword, &value) in (s.first_dword()..).zip(s.values) {
                    walk.registers.insert(dword, value);
                }
            }
            Packet::EventWrite(e) if e.address.is_none() && e.control.event_type() == EventType::CsPartialFlush => {
                walk.flush = true;
            }
            Packet::AcquireMem(a) => walk.acquire(family, a.gcr_cntl),
            // Padding: changes no state (a patcher may blank a packet in place).
            Packet::Nop(_) => {}
            Packet::DispatchDirect(d) => {
                let index = walk.dispatches.len();
                let record = launches
                    .get(index)
                    .ok_or(VerifyError::DispatchCount { expected: launches.len(), found: index + 1 })?;
                if index == 0 && !walk.entry {
                    return Err(VerifyError::MissingEntryAcquire);
                }
                let slot = kernels(&record.artifact)
                    .ok_or_else(|| VerifyError::UnknownKernel { dispatch: index, artifact: record.artifact.clone() })?;
                let wait_expected = boundaries.binary_search(&index).is_ok();
                walk.check_wait(index, wait_expected)?;
                let e = Expected { index, record, slot, kernarg_va: kernarg_vas[index] };
                check_dispatch(family, &walk.registers, &d, &e)?;
                walk.dispatches.push(decoded.offset);
                walk.flush = false;
                walk.consumer_acquire = false;
                walk.system_acquire_after_flush = false;
            }
            _ => return Err(VerifyError::UnexpectedPacket { offset: decoded.offset, header: decoded.words[0] }),
        }
    }
    if walk.dispatches.len() != launches.len() {
        return Err(VerifyError::DispatchCount { expected: launches.len(), found: walk.dispatches.len() });
    }
    if !walk.system_acquire_after_flush {
        return Err(VerifyError::MissingTerminal);
    }
    if walk.dispatches != lowered.dispatch_offsets || boundaries != lowered.boundaries {
        return Err(VerifyError::Bookkeeping);
    }
    check_patch_sites(lowered, tape, family, kernarg_vas)
}

impl Walk {
    fn acquire(&mut self, family: Family, gcr: GcrCntl) {
        let system_gcr = pm4_encoding::policy::system_acquire_gcr(family).raw();
        let system = gcr.raw() & system_gcr == system_gcr;
        if self.dispatches.is_empty() && system {
            self.entry = true;
        }
        if self.flush {
            self.consumer_acquire |= pm4_encoding::policy::invalidates_consumer_caches(family, gcr);
            self.system_acquire_after_flush |= system;
        }
    }

    fn check_wait(&self, dispatch: usize, expected: bool) -> Result<(), VerifyError> {
        // The entry acquire orders the host's writes; a wait before the first dispatch orders
        // nothing, and tape-core never puts a boundary there.
        if self.flush != expected {
            return Err(VerifyError::Wait { dispatch, expected, found: self.flush });
        }
        if expected && !self.consumer_acquire {
            return Err(VerifyError::MissingConsumerAcquire { dispatch });
        }
        Ok(())
    }
}

fn get(registers: &BTreeMap<u32, u32>, dispatch: usize, register: RegisterInfo) -> Result<u32, VerifyError> {
    registers.get(&register.dword).copied().ok_or(VerifyError::RegisterNotSet { dispatch, name: register.name })
}

fn check_register(
    registers: &BTreeMap<u32, u32>,
    dispatch: usize,
    register: RegisterInfo,
    expected: u32,
) -> Result<(), VerifyError> {
    let found = get(registers, dispatch, register)?;
    let name = register.name;
    if found == expected { Ok(()) } else { Err(VerifyError::Register { dispatch, name, expected, found }) }
}

fn check_dispatch(
    family: Family,
    registers: &BTreeMap<u32, u32>,
    d: &DispatchDirect,
    e: &Expected<'_>,
) -> Result<(), VerifyError> {
    let dispatch = e.index;
    let descriptor = &e.slot.kernel.descriptor;
    let compute = &family.facts().compute;
    let lo = get(registers, dispatch, compute.pgm_lo)?;
    let hi = get(registers, dispatch, compute.pgm_hi)?;
    let found = (u64::from(hi) << 40) | (u64::from(lo) << 8);
    let expected = e.slot.loaded.entry_va;
    if found != expected {
        return Err(VerifyError::ProgramAddress { dispatch, expected, found });
    }
    check_register(registers, dispatch, compute.pgm_rsrc1, descriptor.compute_pgm_rsrc1())?;
    let lds_bytes = e.record.lds.static_bytes.saturating_add(e.record.lds.dynamic_bytes);
    // An LDS size the field cannot hold has no correct encoding: expect the impossible u32::MAX.
    let rsrc2 = regs::lds_size_field(family, lds_bytes)
        .ok()
        .and_then(|granules| regs::rsrc2_with_lds_size(family, descriptor.compute_pgm_rsrc2(), granules))
        .unwrap_or(u32::MAX);
    check_register(registers, dispatch, compute.pgm_rsrc2, rsrc2)?;
    check_register(registers, dispatch, compute.pgm_rsrc3, descriptor.compute_pgm_rsrc3())?;
    let g = e.record.geometry;
    for (axis, register) in compute.num_thread.into_iter().enumerate() {
        let full = u32::from(g.workgroup_work_items[axis]);
        // `u32::MAX` is never a valid word here: a value that does not fit can match nothing.
        let expected =
            regs::num_thread_word(family, axis, full, g.grid_work_items[axis] % full.max(1)).unwrap_or(u32::MAX);
        check_register(registers, dispatch, register, expected)?;
    }
    check_user_data(family, registers, e)?;
    check_dispatch_packet(family, d, e)
}

fn check_user_data(family: Family, registers: &BTreeMap<u32, u32>, e: &Expected<'_>) -> Result<(), VerifyError> {
    let dispatch = e.index;
    let layout = UserSgprLayout::new(&e.slot.kernel.descriptor, family);
    let mut expected = [0u32; 16];
    for block in layout.blocks() {
        match block.kind {
            UserSgpr::KernargSegmentPtr => {
                // CAST: the two dwords of a 64-bit pointer.
                #[allow(clippy::cast_possible_truncation)]
                let (lo, hi) = (e.kernarg_va as u32, (e.kernarg_va >> 32) as u32);
                let first = usize::from(block.first);
                expected[first] = lo;
                expected[first + 1] = hi;
            }
            // A scratch-less kernel's private-segment buffer V#, where the family has absolute
            // flat scratch: zeros.
            UserSgpr::PrivateSegmentBuffer if family.facts().private_segment_buffer() => {}
            block => return Err(VerifyError::UnsupportedUserSgpr { dispatch, block }),
        }
    }
    let user_data_0 = family.facts().compute.user_data[0].dword;
    // Reference §6: RSRC2.USER_SGPR registers are loaded, at most 16.
    let count = layout.rsrc2_user_sgpr().min(16);
    for register in 0..count {
        let want = expected[usize::from(register)];
        let found = registers.get(&(user_data_0 + u32::from(register))).copied();
        if found != Some(want) {
            return Err(VerifyError::UserData { dispatch, register, expected: want, found });
        }
    }
    Ok(())
}

fn check_dispatch_packet(family: Family, d: &DispatchDirect, e: &Expected<'_>) -> Result<(), VerifyError> {
    let dispatch = e.index;
    let g = e.record.geometry;
    let work_items = family.facts().dims_in_work_items;
    let expected: [u32; 3] = core::array::from_fn(|a| {
        if work_items {
            g.grid_work_items[a]
        } else {
            g.grid_work_items[a].div_ceil(u32::from(g.workgroup_work_items[a]).max(1))
        }
    });
    let found = [d.dim_x, d.dim_y, d.dim_z];
    if found != expected {
        return Err(VerifyError::Dimensions { dispatch, expected, found });
    }
    let partial = (0..3).any(|a| !g.grid_work_items[a].is_multiple_of(u32::from(g.workgroup_work_items[a]).max(1)));
    let i = d.initiator;
    let fields = [
        ("COMPUTE_SHADER_EN", 1, i.compute_shader_en()),
        ("USE_THREAD_DIMENSIONS", u32::from(work_items), i.use_thread_dimensions()),
        ("PARTIAL_TG_EN", u32::from(partial), i.partial_tg_en()),
        ("CS_W32_EN", u32::from(e.record.wave_size == 32), i.cs_w32_en()),
    ];
    for (field, expected, found) in fields {
        if expected != found {
            return Err(VerifyError::Initiator { dispatch, field, expected, found });
        }
    }
    Ok(())
}

/// The lowered IB's sites are the ones lowering's own [`patch_sites`] gives for the tape, the
/// family and the decoded dispatch offsets: one function decides where each binding goes and in
/// which unit, so the verifier cannot accept a unit the replay would not write.
fn check_patch_sites(lowered: &LoweredIb, tape: &Tape, family: Family, kernarg_vas: &[u64]) -> Result<(), VerifyError> {
    let expected = patch_sites(tape, family, kernarg_vas, &lowered.dispatch_offsets);
    if lowered.patch_sites.len() != expected.len() {
        return Err(VerifyError::PatchSite { binding: expected.len().min(lowered.patch_sites.len()) });
    }
    match lowered.patch_sites.iter().zip(&expected).position(|(site, expected)| site != expected) {
        Some(binding) => Err(VerifyError::PatchSite { binding }),
        None => Ok(()),
    }
}
