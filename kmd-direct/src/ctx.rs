//! Contexts, command submission of one IB chunk, and waiting for it.

use std::os::fd::AsFd;
use std::time::Duration;

use crate::abi::{
    AMDGPU_CHUNK_ID_IB, AMDGPU_CTX_OP_ALLOC_CTX, AMDGPU_CTX_OP_FREE_CTX, AMDGPU_CTX_PRIORITY_NORMAL, AMDGPU_HW_IP_COMPUTE,
    DrmAmdgpuCs, DrmAmdgpuCsChunk, DrmAmdgpuCsChunkIb, DrmAmdgpuCsIn, DrmAmdgpuCtx, DrmAmdgpuCtxIn, DrmAmdgpuWaitCs,
    DrmAmdgpuWaitCsIn,
};
use crate::device::Device;
use crate::error::{IoctlError, SubmitError, WaitError};
use crate::flags::IbFlags;
use crate::gem::BoList;
use crate::sys;

/// The longest [`Context::wait`] blocks.
///
/// TIMEOUT: a compute IB that has not finished in 10 s is hung or starved, and a bounded wait
/// lets the caller report it instead of blocking forever; the kernel's own job timeout resets a
/// hung queue on its own schedule.
pub const WAIT_TIMEOUT_MAX: Duration = Duration::from_secs(10);

/// `length_dw` of an IB chunk.
// CAST: the struct is 32 bytes (asserted in `abi::amdgpu`), 8 dwords.
#[allow(clippy::cast_possible_truncation)]
const IB_CHUNK_DWORDS: u32 = (size_of::<DrmAmdgpuCsChunkIb>() / 4) as u32;

/// A GPU context (`AMDGPU_CTX_OP_ALLOC_CTX`); freed on drop.
#[derive(Debug)]
pub struct Context<'d> {
    device: &'d Device,
    id: u32,
}

/// One indirect buffer to run (`struct drm_amdgpu_cs_chunk_ib`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IbChunk {
    /// GPU virtual address of the first dword (mapped with [`crate::Bo::map_va`]).
    pub va_start: u64,
    /// Size in bytes, a nonzero multiple of 4.
    pub ib_bytes: u32,
    /// `AMDGPU_HW_IP_*`.
    pub ip_type: u32,
    /// Index of the IP of that type.
    pub ip_instance: u32,
    /// Ring index.
    pub ring: u32,
    /// `AMDGPU_IB_FLAG_*`.
    pub flags: IbFlags,
}

impl IbChunk {
    /// An IB for compute ring 0 of IP instance 0, without flags.
    #[must_use]
    pub fn compute(va_start: u64, ib_bytes: u32) -> Self {
        Self { va_start, ib_bytes, ip_type: AMDGPU_HW_IP_COMPUTE, ip_instance: 0, ring: 0, flags: IbFlags::empty() }
    }
}

/// A submitted command stream, identified as `DRM_IOCTL_AMDGPU_WAIT_CS` wants it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    /// The context it was submitted on.
    pub ctx_id: u32,
    /// `AMDGPU_HW_IP_*`.
    pub ip_type: u32,
    /// IP instance.
    pub ip_instance: u32,
    /// Ring.
    pub ring: u32,
    /// Sequence number (`drm_amdgpu_cs_out::handle`).
    pub seq_no: u64,
}

impl Device {
    /// `DRM_IOCTL_AMDGPU_CTX` with `AMDGPU_CTX_OP_ALLOC_CTX`, normal priority.
    ///
    /// # Errors
    ///
    /// The ioctl's error.
    pub fn create_context(&self) -> Result<Context<'_>, IoctlError> {
        let mut arg = DrmAmdgpuCtx { r#in: ctx_in(AMDGPU_CTX_OP_ALLOC_CTX, 0) };
        sys::ioctl(self.as_fd(), sys::AMDGPU_CTX, &mut arg)?;
        // SAFETY: plain integers, every byte initialized from `in`, which is as large as the
        // union (asserted in `abi::amdgpu`).
        let id = unsafe { arg.out.alloc }.ctx_id;
        Ok(Context { device: self, id })
    }
}

fn ctx_in(op: u32, ctx_id: u32) -> DrmAmdgpuCtxIn {
    DrmAmdgpuCtxIn { op, flags: 0, ctx_id, priority: AMDGPU_CTX_PRIORITY_NORMAL }
}

impl Context<'_> {
    /// The context id.
    #[must_use]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// `DRM_IOCTL_AMDGPU_CS` with one `AMDGPU_CHUNK_ID_IB` chunk, and optionally a BO list
    /// (objects created with `AMDGPU_GEM_CREATE_VM_ALWAYS_VALID` need none).
    ///
    /// # Errors
    ///
    /// [`SubmitError::EmptyIb`], [`SubmitError::IbNotDwords`], or the ioctl's error.
    pub fn submit(&self, ib: &IbChunk, bo_list: Option<&BoList<'_>>) -> Result<Fence, SubmitError> {
        if ib.ib_bytes == 0 {
            return Err(SubmitError::EmptyIb);
        }
        if !ib.ib_bytes.is_multiple_of(4) {
            return Err(SubmitError::IbNotDwords { ib_bytes: ib.ib_bytes });
        }
        let ib_data = DrmAmdgpuCsChunkIb {
            _pad: 0,
            flags: ib.flags.bits(),
            va_start: ib.va_start,
            ib_bytes: ib.ib_bytes,
            ip_type: ib.ip_type,
            ip_instance: ib.ip_instance,
            ring: ib.ring,
        };
        let chunk = DrmAmdgpuCsChunk {
            chunk_id: AMDGPU_CHUNK_ID_IB,
            length_dw: IB_CHUNK_DWORDS,
            chunk_data: std::ptr::from_ref(&ib_data).expose_provenance() as u64,
        };
        // `chunks` points at an array of user pointers, one per chunk.
        let chunk_pointers = [std::ptr::from_ref(&chunk).expose_provenance() as u64];
        let mut arg = DrmAmdgpuCs {
            r#in: DrmAmdgpuCsIn {
                ctx_id: self.id,
                bo_list_handle: bo_list.map_or(0, BoList::handle),
                num_chunks: 1,
                flags: 0,
                chunks: chunk_pointers.as_ptr().expose_provenance() as u64,
            },
        };
        // SAFETY: `chunks` points at one `u64` holding the address of `chunk`, whose
        // `chunk_data` is the address of `ib_data` with `length_dw` its size in dwords; all three
        // live on this stack frame until after the call, and the kernel only reads them. It
        // writes back the plain-integer `out` member.
        unsafe { sys::ioctl_with_pointers(self.device.as_fd(), sys::AMDGPU_CS, &mut arg) }?;
        // SAFETY: plain integers, every byte initialized from `in` (see `create_context`).
        let seq_no = unsafe { arg.out }.handle;
        Ok(Fence { ctx_id: self.id, ip_type: ib.ip_type, ip_instance: ib.ip_instance, ring: ib.ring, seq_no })
    }

    /// `DRM_IOCTL_AMDGPU_WAIT_CS` for `fence`, at most `timeout` (at most [`WAIT_TIMEOUT_MAX`]).
    ///
    /// # Errors
    ///
    /// [`WaitError::TimeoutTooLong`], [`WaitError::Busy`] when the submission did not finish in
    /// time, or the ioctl's error.
    pub fn wait(&self, fence: &Fence, timeout: Duration) -> Result<(), WaitError> {
        if timeout > WAIT_TIMEOUT_MAX {
            return Err(WaitError::TimeoutTooLong {
                timeout_ms: timeout.as_millis(),
                limit_ms: WAIT_TIMEOUT_MAX.as_millis(),
            });
        }
        // TIMEOUT: the header says only that the timeout is absolute; the amdgpu driver compares
        // it with the kernel's monotonic clock, so the deadline is now on CLOCK_MONOTONIC plus
        // the bounded relative timeout (unverified on a GPU, see the crate docs).
        // CAST: at most `WAIT_TIMEOUT_MAX`, 10^10 ns, checked above.
        let timeout_ns = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        let deadline_ns = monotonic_ns()?.saturating_add(timeout_ns);
        let mut arg = DrmAmdgpuWaitCs {
            r#in: DrmAmdgpuWaitCsIn {
                handle: fence.seq_no,
                timeout: deadline_ns,
                ip_type: fence.ip_type,
                ip_instance: fence.ip_instance,
                ring: fence.ring,
                ctx_id: fence.ctx_id,
            },
        };
        sys::ioctl(self.device.as_fd(), sys::AMDGPU_WAIT_CS, &mut arg)?;
        // SAFETY: plain integers, every byte initialized from `in` (see `create_context`).
        let status = unsafe { arg.out }.status;
        // The header: 0 completed, 1 still busy.
        if status == 0 {
            Ok(())
        } else {
            Err(WaitError::Busy { seq_no: fence.seq_no, timeout_ms: timeout.as_millis() })
        }
    }
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        let mut arg = DrmAmdgpuCtx { r#in: ctx_in(AMDGPU_CTX_OP_FREE_CTX, self.id) };
        // A failed free is released with the descriptor; drop cannot report it.
        let _ = sys::ioctl(self.device.as_fd(), sys::AMDGPU_CTX, &mut arg);
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds.
fn monotonic_ns() -> Result<u64, WaitError> {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a live, exclusively borrowed `timespec` for the call to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) } != 0 {
        return Err(WaitError::Clock { errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0) });
    }
    // CAST: the monotonic clock is never negative; a negative field would read as 0.
    let secs = u64::try_from(now.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(now.tv_nsec).unwrap_or(0);
    Ok(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A context over `/dev/null`: every ioctl fails with `ENOTTY`, so what reaches the kernel
    /// is visible by the request named in the error. Its drop's FREE fails the same way.
    fn null_context(device: &Device) -> Context<'_> {
        Context { device, id: 1 }
    }

    #[test]
    fn submit_checks_the_ib_then_reaches_the_cs_ioctl() {
        let device = Device::open("/dev/null").unwrap();
        let ctx = null_context(&device);
        assert!(matches!(ctx.submit(&IbChunk::compute(0x1000, 0), None), Err(SubmitError::EmptyIb)));
        assert!(matches!(
            ctx.submit(&IbChunk::compute(0x1000, 6), None),
            Err(SubmitError::IbNotDwords { ib_bytes: 6 })
        ));
        match ctx.submit(&IbChunk::compute(0x1000, 64), None) {
            Err(SubmitError::Ioctl(e)) => {
                assert_eq!(e.ioctl, "DRM_IOCTL_AMDGPU_CS");
                assert_eq!(e.errno, libc::ENOTTY);
            }
            other => panic!("expected the CS ioctl's error, got {other:?}"),
        }
    }

    #[test]
    fn wait_is_bounded_then_reaches_the_wait_ioctl() {
        let device = Device::open("/dev/null").unwrap();
        let ctx = null_context(&device);
        let fence = Fence { ctx_id: 1, ip_type: AMDGPU_HW_IP_COMPUTE, ip_instance: 0, ring: 0, seq_no: 1 };
        assert!(matches!(
            ctx.wait(&fence, WAIT_TIMEOUT_MAX + Duration::from_millis(1)),
            Err(WaitError::TimeoutTooLong { timeout_ms: 10_001, limit_ms: 10_000 })
        ));
        match ctx.wait(&fence, Duration::from_millis(1)) {
            Err(WaitError::Ioctl(e)) => assert_eq!(e.ioctl, "DRM_IOCTL_AMDGPU_WAIT_CS"),
            other => panic!("expected the WAIT_CS ioctl's error, got {other:?}"),
        }
    }

    #[test]
    fn monotonic_clock_advances() {
        let a = monotonic_ns().unwrap();
        let b = monotonic_ns().unwrap();
        assert!(a > 0 && b >= a);
    }
}
