//! Whether a kernel can be replayed from a retained PM4 body, and every reason it cannot.
//!
//! A retained replay writes the user SGPRs itself, uses recorded kernarg bytes with the hidden
//! arguments it can recompute, and provides no scratch, no dynamic stack and no runtime services
//! (printf, hostcall, heap, device enqueue). Anything outside that, anything inconsistent between
//! descriptor and metadata, and anything this crate does not recognise is a [`Reason`]: the
//! verdict fails closed.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use pm4_encoding::Family;

use crate::code_object::Kernel;
use crate::descriptor::{ReservedBits, ReservedBytes};
use crate::layout::{KernargLayout, LayoutError};
use crate::metadata::ValueKind;
use crate::sgpr::{USER_SGPR_MAX, UserSgpr, UserSgprCount, UserSgprLayout};
use crate::target::TargetId;

/// The verdict on one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// True exactly when `reasons` is empty.
    pub supported: bool,
    /// Every reason the kernel cannot be replayed, in a stable order.
    pub reasons: Vec<Reason>,
}

/// One reason a kernel cannot be replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The code object's processor is not a supported target.
    UnsupportedTarget {
        /// LLVM's processor name.
        name: &'static str,
        /// `EF_AMDGPU_MACH`.
        mach: u32,
    },
    /// `e_flags` has bits this crate does not know.
    UnknownTargetFlags {
        /// The unknown bits.
        flags: u32,
    },
    /// The kernel uses scratch (private segment).
    PrivateSegment {
        /// Descriptor `private_segment_fixed_size`.
        descriptor_bytes: u32,
        /// Metadata `.private_segment_fixed_size`.
        metadata_bytes: u32,
        /// `RSRC2.ENABLE_PRIVATE_SEGMENT`.
        rsrc2_enable: bool,
    },
    /// The kernel uses a dynamically sized stack.
    DynamicStack {
        /// `kernel_code_properties.USES_DYNAMIC_STACK`.
        descriptor: bool,
        /// Metadata `.uses_dynamic_stack`.
        metadata: bool,
    },
    /// A user SGPR the replay does not provide.
    UserSgpr(UserSgpr),
    /// Kernarg preloading into SGPRs.
    KernargPreload {
        /// Preloaded dwords.
        length: u32,
        /// Dword offset of the first.
        offset: u32,
    },
    /// The enabled user SGPRs exceed the 16 user-data registers.
    UserSgprOverflow {
        /// SGPRs needed.
        total: u8,
    },
    /// `RSRC2.USER_SGPR` is smaller than the enabled blocks need.
    UserSgprCount {
        /// `RSRC2.USER_SGPR`.
        rsrc2: u8,
        /// SGPRs the enabled blocks need.
        layout: u8,
    },
    /// Descriptor `kernarg_size` (non-zero) differs from `.kernarg_segment_size`.
    KernargSizeMismatch {
        /// Descriptor value.
        descriptor: u32,
        /// Metadata value.
        metadata: u32,
    },
    /// Descriptor `group_segment_fixed_size` differs from `.group_segment_fixed_size`.
    GroupSegmentMismatch {
        /// Descriptor value.
        descriptor: u32,
        /// Metadata value.
        metadata: u32,
    },
    /// `.wavefront_size` disagrees with `ENABLE_WAVEFRONT_SIZE32` (or is neither 32 nor 64).
    WavefrontSizeMismatch {
        /// Metadata value.
        metadata: u32,
        /// `kernel_code_properties.ENABLE_WAVEFRONT_SIZE32`.
        wave32: bool,
    },
    /// `.workgroup_processor_mode` disagrees with `RSRC1.WGP_MODE`.
    WgpModeMismatch {
        /// Metadata value.
        metadata: bool,
        /// `RSRC1.WGP_MODE`.
        rsrc1: bool,
    },
    /// Reserved descriptor bytes are not zero.
    ReservedBytes(ReservedBytes),
    /// Descriptor bits the ABI requires zero are set.
    ReservedBits(ReservedBits),
    /// An argument `.value_kind` this crate does not know.
    UnknownValueKind {
        /// Argument index.
        index: usize,
        /// The value kind string.
        kind: String,
    },
    /// A hidden argument a replay cannot synthesise (a runtime service pointer).
    UnsupportedHiddenArg {
        /// Argument index.
        index: usize,
        /// The value kind.
        kind: ValueKind,
    },
    /// The kernel has arguments but no kernarg segment pointer SGPR.
    KernargPtrMissing {
        /// `.kernarg_segment_size`.
        segment_size: u32,
        /// Number of arguments.
        args: usize,
    },
    /// The argument list is not a valid layout.
    KernargLayout(LayoutError),
    /// A `.kind` other than `normal` (`init`/`fini` kernels run at load time).
    KernelKind {
        /// The `.kind` string.
        kind: String,
    },
}

impl Reason {
    /// A stable identifier for reports and tests.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Reason::UnsupportedTarget { .. } => "unsupported_target",
            Reason::UnknownTargetFlags { .. } => "unknown_target_flags",
            Reason::PrivateSegment { .. } => "private_segment",
            Reason::DynamicStack { .. } => "dynamic_stack",
            Reason::UserSgpr(kind) => match kind {
                UserSgpr::PrivateSegmentBuffer => "private_segment_buffer",
                UserSgpr::DispatchPtr => "dispatch_ptr",
                UserSgpr::QueuePtr => "queue_ptr",
                UserSgpr::KernargSegmentPtr => "kernarg_segment_ptr",
                UserSgpr::DispatchId => "dispatch_id",
                UserSgpr::FlatScratchInit => "flat_scratch_init",
                UserSgpr::PreloadedKernargs => "preloaded_kernargs",
                UserSgpr::PrivateSegmentSize => "private_segment_size",
            },
            Reason::KernargPreload { .. } => "kernarg_preload",
            Reason::UserSgprOverflow { .. } => "user_sgpr_overflow",
            Reason::UserSgprCount { .. } => "user_sgpr_count",
            Reason::KernargSizeMismatch { .. } => "kernarg_size_mismatch",
            Reason::GroupSegmentMismatch { .. } => "group_segment_mismatch",
            Reason::WavefrontSizeMismatch { .. } => "wavefront_size_mismatch",
            Reason::WgpModeMismatch { .. } => "wgp_mode_mismatch",
            Reason::ReservedBytes(_) => "descriptor_reserved_bytes",
            Reason::ReservedBits(_) => "descriptor_reserved_bits",
            Reason::UnknownValueKind { .. } => "unknown_value_kind",
            Reason::UnsupportedHiddenArg { .. } => "unsupported_hidden_arg",
            Reason::KernargPtrMissing { .. } => "kernarg_ptr_missing",
            Reason::KernargLayout(_) => "kernarg_layout",
            Reason::KernelKind { .. } => "kernel_kind",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::UnsupportedTarget { name, mach } => {
                write!(f, "target {name} (EF_AMDGPU_MACH {mach:#x}) is not a supported target")
            }
            Reason::UnknownTargetFlags { flags } => write!(f, "e_flags has unknown bits {flags:#x}"),
            Reason::PrivateSegment { descriptor_bytes, metadata_bytes, rsrc2_enable } => write!(
                f,
                "the kernel uses scratch (descriptor {descriptor_bytes} bytes, metadata {metadata_bytes} bytes per \
                 work-item, ENABLE_PRIVATE_SEGMENT {}), which a retained replay does not provide",
                u8::from(*rsrc2_enable)
            ),
            Reason::DynamicStack { descriptor, metadata } => write!(
                f,
                "the kernel uses a dynamic stack (descriptor {}, metadata {}), which a retained replay does not provide",
                u8::from(*descriptor),
                u8::from(*metadata)
            ),
            Reason::UserSgpr(kind) => {
                write!(f, "the kernel enables the {kind} user SGPR, which a retained replay does not provide")
            }
            Reason::KernargPreload { length, offset } => write!(
                f,
                "the kernel preloads {length} kernarg dwords from dword {offset} into SGPRs, which a retained replay does not do"
            ),
            Reason::UserSgprOverflow { total } => {
                write!(
                    f,
                    "the enabled user SGPRs need {total} registers, more than the {USER_SGPR_MAX} user-data registers"
                )
            }
            Reason::UserSgprCount { rsrc2, layout } => write!(
                f,
                "RSRC2.USER_SGPR is {rsrc2} but the enabled user SGPRs need {layout}: the descriptor is inconsistent"
            ),
            Reason::KernargSizeMismatch { descriptor, metadata } => {
                write!(f, "descriptor kernarg_size {descriptor} differs from metadata .kernarg_segment_size {metadata}")
            }
            Reason::GroupSegmentMismatch { descriptor, metadata } => write!(
                f,
                "descriptor group_segment_fixed_size {descriptor} differs from metadata .group_segment_fixed_size {metadata}"
            ),
            Reason::WavefrontSizeMismatch { metadata, wave32 } => write!(
                f,
                "metadata .wavefront_size {metadata} disagrees with ENABLE_WAVEFRONT_SIZE32 = {}",
                u8::from(*wave32)
            ),
            Reason::WgpModeMismatch { metadata, rsrc1 } => write!(
                f,
                "metadata .workgroup_processor_mode {} disagrees with RSRC1.WGP_MODE {}",
                u8::from(*metadata),
                u8::from(*rsrc1)
            ),
            Reason::ReservedBytes(r) => {
                write!(f, "descriptor {} (bytes {}..{}) is not zero", r.field, r.offset, r.offset + r.size)
            }
            Reason::ReservedBits(r) => {
                write!(f, "descriptor {} sets {} bits {:#x}, which must be zero", r.word, r.field, r.bits)
            }
            Reason::UnknownValueKind { index, kind } => write!(f, "argument {index} has unknown value kind {kind:?}"),
            Reason::UnsupportedHiddenArg { index, kind } => {
                write!(f, "argument {index} is {kind}, a runtime service pointer a retained replay cannot provide")
            }
            Reason::KernargPtrMissing { segment_size, args } => write!(
                f,
                "the kernel has {args} arguments in a {segment_size}-byte kernarg segment but does not enable the kernarg \
                 segment pointer SGPR"
            ),
            Reason::KernargLayout(e) => write!(f, "the kernarg layout is invalid: {e}"),
            Reason::KernelKind { kind } => write!(f, "kernel kind {kind:?} is not a normal kernel"),
        }
    }
}

/// Judges whether `kernel` of a code object for `target` can be replayed from a retained body.
#[must_use]
pub fn verdict(kernel: &Kernel, target: &TargetId) -> Verdict {
    let mut reasons = Vec::new();
    let family = target.target.map(pm4_encoding::Target::family);
    if family.is_none() {
        reasons.push(Reason::UnsupportedTarget { name: target.name, mach: target.mach });
    }
    if target.unknown_flags != 0 {
        reasons.push(Reason::UnknownTargetFlags { flags: target.unknown_flags });
    }
    resources(kernel, &mut reasons);
    user_sgprs(kernel, family, &mut reasons);
    consistency(kernel, family, &mut reasons);
    arguments(kernel, &mut reasons);
    Verdict { supported: reasons.is_empty(), reasons }
}

/// Scratch, dynamic stack and kernel kind.
fn resources(kernel: &Kernel, reasons: &mut Vec<Reason>) {
    let (d, m) = (&kernel.descriptor, &kernel.metadata);
    if d.private_segment_fixed_size() > 0 || m.private_segment_fixed_size > 0 || d.enable_private_segment() {
        reasons.push(Reason::PrivateSegment {
            descriptor_bytes: d.private_segment_fixed_size(),
            metadata_bytes: m.private_segment_fixed_size,
            rsrc2_enable: d.enable_private_segment(),
        });
    }
    let descriptor_stack = d.kernel_code_properties().uses_dynamic_stack() != 0;
    if descriptor_stack || m.uses_dynamic_stack {
        reasons.push(Reason::DynamicStack { descriptor: descriptor_stack, metadata: m.uses_dynamic_stack });
    }
    if let Some(kind) = m.kind.as_deref().filter(|k| *k != "normal") {
        reasons.push(Reason::KernelKind { kind: kind.into() });
    }
}

/// User SGPRs the replay does not write, preloading, and the SGPR count.
fn user_sgprs(kernel: &Kernel, family: Option<Family>, reasons: &mut Vec<Reason>) {
    let d = &kernel.descriptor;
    // With an unknown family the layout is still the ABI order; RSRC2 is typed as gfx12's, whose
    // USER_SGPR field sits where every family's does, and the count check is skipped.
    let layout = UserSgprLayout::new(d, family.unwrap_or(Family::Gfx12));
    // Reference §6: the 4-SGPR private-segment buffer exists only with absolute flat scratch; the
    // lowering writes it exactly where this column says so.
    let replays_buffer = family.is_some_and(|f| f.facts().private_segment_buffer());
    for block in layout.blocks() {
        match block.kind {
            UserSgpr::KernargSegmentPtr | UserSgpr::PreloadedKernargs => {}
            UserSgpr::PrivateSegmentBuffer if replays_buffer => {}
            kind => reasons.push(Reason::UserSgpr(kind)),
        }
    }
    let preload = d.kernarg_preload();
    if preload.raw() != 0 {
        reasons.push(Reason::KernargPreload { length: preload.length(), offset: preload.offset() });
    }
    if layout.total() > USER_SGPR_MAX {
        reasons.push(Reason::UserSgprOverflow { total: layout.total() });
    }
    if family.is_some()
        && let UserSgprCount::Smaller { rsrc2, layout } = layout.rsrc2_count()
    {
        reasons.push(Reason::UserSgprCount { rsrc2, layout });
    }
    let m = &kernel.metadata;
    if layout.kernarg_ptr_sgpr().is_none() && (!m.args.is_empty() || m.kernarg_segment_size > 0) {
        reasons.push(Reason::KernargPtrMissing { segment_size: m.kernarg_segment_size, args: m.args.len() });
    }
}

/// Descriptor against metadata, and reserved bytes and bits.
fn consistency(kernel: &Kernel, family: Option<Family>, reasons: &mut Vec<Reason>) {
    let (d, m) = (&kernel.descriptor, &kernel.metadata);
    if d.kernarg_size() != 0 && d.kernarg_size() != m.kernarg_segment_size {
        reasons.push(Reason::KernargSizeMismatch { descriptor: d.kernarg_size(), metadata: m.kernarg_segment_size });
    }
    if d.group_segment_fixed_size() != m.group_segment_fixed_size {
        reasons.push(Reason::GroupSegmentMismatch {
            descriptor: d.group_segment_fixed_size(),
            metadata: m.group_segment_fixed_size,
        });
    }
    let wave32 = d.kernel_code_properties().enable_wavefront_size32() != 0;
    let expected_wave = if wave32 { 32 } else { 64 };
    if m.wavefront_size != expected_wave {
        reasons.push(Reason::WavefrontSizeMismatch { metadata: m.wavefront_size, wave32 });
    }
    if let (Some(family), Some(metadata)) = (family, m.workgroup_processor_mode) {
        let rsrc1 = d.rsrc1(family).wgp_mode();
        if rsrc1 != metadata {
            reasons.push(Reason::WgpModeMismatch { metadata, rsrc1 });
        }
    }
    reasons.extend(d.nonzero_reserved_bytes().into_iter().map(Reason::ReservedBytes));
    if let Some(family) = family {
        reasons.extend(d.reserved_bits(family).into_iter().map(Reason::ReservedBits));
    }
}

/// Argument kinds and the layout.
fn arguments(kernel: &Kernel, reasons: &mut Vec<Reason>) {
    for (index, arg) in kernel.metadata.args.iter().enumerate() {
        use ValueKind as K;
        match &arg.value_kind {
            K::Unknown(kind) => reasons.push(Reason::UnknownValueKind { index, kind: kind.clone() }),
            kind @ (K::HiddenPrintfBuffer
            | K::HiddenHostcallBuffer
            | K::HiddenHeapV1
            | K::HiddenMultigridSyncArg
            | K::HiddenDefaultQueue
            | K::HiddenCompletionAction
            | K::HiddenQueuePtr
            | K::HiddenPrivateBase
            | K::HiddenSharedBase) => reasons.push(Reason::UnsupportedHiddenArg { index, kind: kind.clone() }),
            _ => {}
        }
    }
    if let Err(e) = KernargLayout::new(&kernel.metadata) {
        reasons.push(Reason::KernargLayout(e));
    }
}

#[cfg(test)]
mod tests;
