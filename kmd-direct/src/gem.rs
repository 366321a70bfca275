//! GEM buffer objects: create, CPU mapping, GPU virtual address mapping, close; BO lists.

use std::marker::PhantomData;
use std::num::{NonZeroU32, NonZeroUsize};
use std::os::fd::{AsFd, BorrowedFd};
use std::ptr::NonNull;

use nix::errno::Errno;
use nix::sys::mman::{MapFlags, ProtFlags, mmap, munmap};

use crate::abi::{
    AMDGPU_BO_LIST_OP_CREATE, AMDGPU_BO_LIST_OP_DESTROY, AMDGPU_VA_OP_MAP, AMDGPU_VA_OP_UNMAP, DRM_IOCTL_GEM_CLOSE,
    DrmAmdgpuBoList, DrmAmdgpuBoListEntry, DrmAmdgpuBoListIn, DrmAmdgpuGemCreate, DrmAmdgpuGemCreateIn,
    DrmAmdgpuGemMmap, DrmAmdgpuGemMmapIn, DrmAmdgpuGemVa,
};
use crate::device::Device;
use crate::error::{GemError, IoctlError, SubmitError};
use crate::flags::{GemCreateFlags, GemDomains, VmPageFlags};
use crate::sys;

/// Most buffer objects one [`BoList`] takes.
pub const BO_LIST_MAX: usize = 4096;

/// `bo_info_size` of a BO list.
// CAST: the entry is 8 bytes (asserted in `abi::amdgpu`).
#[allow(clippy::cast_possible_truncation)]
const BO_LIST_ENTRY_SIZE: u32 = size_of::<DrmAmdgpuBoListEntry>() as u32;

/// A GEM handle; 0 names no object, and a 0 from the kernel is reported as
/// [`GemError::ZeroHandle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GemHandle(pub NonZeroU32);

impl GemHandle {
    /// The raw handle.
    #[must_use]
    pub fn get(self) -> u32 {
        self.0.get()
    }
}

/// What [`Device::create_bo`] asks for (`struct drm_amdgpu_gem_create_in`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoDesc {
    /// Size in bytes; nonzero.
    pub size: u64,
    /// Physical alignment in bytes (0: the kernel's default).
    pub alignment: u64,
    /// `AMDGPU_GEM_DOMAIN_*`.
    pub domains: GemDomains,
    /// `AMDGPU_GEM_CREATE_*`.
    pub flags: GemCreateFlags,
}

/// A buffer object; closed with `DRM_IOCTL_GEM_CLOSE` on drop.
#[derive(Debug)]
pub struct Bo<'d> {
    device: &'d Device,
    handle: GemHandle,
    size: u64,
}

impl Device {
    /// `DRM_IOCTL_AMDGPU_GEM_CREATE`.
    ///
    /// # Errors
    ///
    /// [`GemError::ZeroSize`], the ioctl's error, or [`GemError::ZeroHandle`].
    pub fn create_bo(&self, desc: BoDesc) -> Result<Bo<'_>, GemError> {
        if desc.size == 0 {
            return Err(GemError::ZeroSize);
        }
        let mut arg = DrmAmdgpuGemCreate {
            r#in: DrmAmdgpuGemCreateIn {
                bo_size: desc.size,
                alignment: desc.alignment,
                domains: u64::from(desc.domains.bits()),
                domain_flags: desc.flags.bits(),
            },
        };
        sys::ioctl(self.as_fd(), sys::AMDGPU_GEM_CREATE, &mut arg)?;
        // SAFETY: the union is plain integers throughout (`FromBytes`, derived) and every byte was
        // initialized from `in`, which is as large as the union (asserted in `abi::amdgpu`).
        let handle = unsafe { arg.out }.handle;
        let handle = GemHandle(NonZeroU32::new(handle).ok_or(GemError::ZeroHandle)?);
        Ok(Bo { device: self, handle, size: desc.size })
    }

    /// `DRM_IOCTL_AMDGPU_BO_LIST` with `AMDGPU_BO_LIST_OP_CREATE`: a residency list for
    /// [`crate::Context::submit`], every entry at priority 0.
    ///
    /// # Errors
    ///
    /// [`SubmitError::TooManyBos`] past [`BO_LIST_MAX`], or the ioctl's error.
    pub fn create_bo_list(&self, bos: &[&Bo<'_>]) -> Result<BoList<'_>, SubmitError> {
        if bos.len() > BO_LIST_MAX {
            return Err(SubmitError::TooManyBos { count: bos.len(), limit: BO_LIST_MAX });
        }
        let entries: Vec<DrmAmdgpuBoListEntry> =
            bos.iter().map(|bo| DrmAmdgpuBoListEntry { bo_handle: bo.handle.get(), bo_priority: 0 }).collect();
        let mut arg = DrmAmdgpuBoList {
            r#in: DrmAmdgpuBoListIn {
                operation: AMDGPU_BO_LIST_OP_CREATE,
                list_handle: 0,
                // PANIC: at most `BO_LIST_MAX` entries, checked above.
                bo_number: u32::try_from(entries.len()).expect("bounded by BO_LIST_MAX"),
                bo_info_size: BO_LIST_ENTRY_SIZE,
                bo_info_ptr: entries.as_ptr().expose_provenance() as u64,
            },
        };
        // SAFETY: `bo_info_ptr` points at `entries`, `bo_number` elements of `bo_info_size`
        // bytes, alive until after the call; the kernel only reads them and writes back integers.
        unsafe { sys::ioctl_with_pointers(self.as_fd(), sys::AMDGPU_BO_LIST, &mut arg) }?;
        // SAFETY: plain integers, every byte initialized from `in` (see `create_bo`).
        let handle = unsafe { arg.out }.list_handle;
        Ok(BoList { device: self, handle })
    }
}

impl<'d> Bo<'d> {
    /// The GEM handle.
    #[must_use]
    pub fn handle(&self) -> GemHandle {
        self.handle
    }

    /// Size in bytes, as requested.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The device the object belongs to.
    #[must_use]
    pub fn device(&self) -> &'d Device {
        self.device
    }

    /// `DRM_IOCTL_AMDGPU_GEM_MMAP`, then `mmap` of the device at the returned offset: the whole
    /// object, read-write, shared. Unmapped on drop.
    ///
    /// # Errors
    ///
    /// The ioctl's error, [`GemError::TooLarge`], [`GemError::ZeroSize`] (an object of size 0,
    /// which [`Device::create_bo`] never returns) or [`GemError::Mmap`].
    pub fn map(&self) -> Result<Mapping<'_>, GemError> {
        let mut arg = DrmAmdgpuGemMmap { r#in: DrmAmdgpuGemMmapIn { handle: self.handle.get(), _pad: 0 } };
        sys::ioctl(self.device.as_fd(), sys::AMDGPU_GEM_MMAP, &mut arg)?;
        // SAFETY: plain integers, every byte initialized from `in` (see `Device::create_bo`).
        let offset = unsafe { arg.out }.addr_ptr;
        let len = usize::try_from(self.size).map_err(|_| GemError::TooLarge { size: self.size })?;
        let len = NonZeroUsize::new(len).ok_or(GemError::ZeroSize)?;
        let mmap_error = |errno: Errno| GemError::Mmap { size: self.size, offset, errno: errno as i32 };
        let file_offset = offset.try_into().map_err(|_| mmap_error(Errno::EOVERFLOW))?;
        // SAFETY: a fresh shared mapping chosen by the kernel (no address hint) overlaps no Rust
        // object; the descriptor is open for the call; `len` is the object's nonzero size.
        let ptr = unsafe {
            mmap(None, len, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE, MapFlags::MAP_SHARED, self.device, file_offset)
        }
        .map_err(mmap_error)?;
        let len = len.get();
        let ptr = ptr.cast::<u8>();
        Ok(Mapping { ptr, len, bo: PhantomData })
    }

    /// `DRM_IOCTL_AMDGPU_GEM_VA` with `AMDGPU_VA_OP_MAP`: the whole object at GPU virtual address
    /// `va`, with `AMDGPU_VM_PAGE_*` flags (and an `AMDGPU_VM_MTYPE_*`). Unmapped on drop.
    ///
    /// The address must lie in the device's VA range (`virtual_address_offset` up to
    /// `virtual_address_max`) and be aligned as the kernel requires; the kernel checks and this
    /// returns its `EINVAL`.
    ///
    /// # Errors
    ///
    /// The ioctl's error.
    pub fn map_va(&self, va: u64, flags: VmPageFlags) -> Result<VaMapping<'_, 'd>, GemError> {
        self.va_op(AMDGPU_VA_OP_MAP, va, flags)?;
        Ok(VaMapping { bo: self, va, flags })
    }

    fn va_op(&self, operation: u32, va: u64, flags: VmPageFlags) -> Result<(), IoctlError> {
        let mut arg = DrmAmdgpuGemVa {
            handle: self.handle.get(),
            _pad: 0,
            operation,
            flags: flags.bits(),
            va_address: va,
            offset_in_bo: 0,
            map_size: self.size,
        };
        sys::ioctl(self.device.as_fd(), sys::AMDGPU_GEM_VA, &mut arg)
    }
}

impl Drop for Bo<'_> {
    fn drop(&mut self) {
        let gem = Gem(self.device.as_fd());
        let handle = drm::buffer::Handle::from(self.handle.0);
        // A failed close leaks the handle until the descriptor closes; drop cannot report it.
        let _ = sys::retry(DRM_IOCTL_GEM_CLOSE, || {
            drm::control::Device::close_buffer(&gem, handle).map_err(|error| sys::errno_of(&error))
        });
    }
}

/// The device descriptor as drm-rs's `control::Device`, whose `close_buffer` is drm-rs's only
/// `DRM_IOCTL_GEM_CLOSE`; private, so the modesetting calls of that trait stay off [`Device`].
struct Gem<'d>(BorrowedFd<'d>);

impl AsFd for Gem<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0
    }
}

impl drm::Device for Gem<'_> {}

impl drm::control::Device for Gem<'_> {}

/// A CPU mapping of a whole buffer object; unmapped on drop, before the object closes.
///
/// The GPU may write the memory at any time, so the mapping hands out no Rust references into
/// it: copies go through [`Mapping::write`] and [`Mapping::read`], or the caller uses the raw
/// pointer.
#[derive(Debug)]
pub struct Mapping<'b> {
    ptr: NonNull<u8>,
    len: usize,
    bo: PhantomData<&'b ()>,
}

impl Mapping<'_> {
    /// Mapped length in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: buffer objects are never empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first mapped byte.
    #[must_use]
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    fn check(&self, offset: usize, len: usize) -> Result<(), GemError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(GemError::OutOfRange { offset, len, size: self.len }),
        }
    }

    /// Copies `src` into the mapping at `offset`.
    ///
    /// # Errors
    ///
    /// [`GemError::OutOfRange`] when the range leaves the mapping.
    pub fn write(&mut self, offset: usize, src: &[u8]) -> Result<(), GemError> {
        self.check(offset, src.len())?;
        // SAFETY: `offset..offset + src.len()` lies in the live mapping (checked above), which no
        // Rust reference aliases; `src` is a distinct Rust allocation.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(offset), src.len()) };
        Ok(())
    }

    /// Copies from the mapping at `offset` into `dst`.
    ///
    /// # Errors
    ///
    /// [`GemError::OutOfRange`] when the range leaves the mapping.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), GemError> {
        self.check(offset, dst.len())?;
        // SAFETY: as in `write`, with the copy in the other direction.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(offset), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }
}

impl Drop for Mapping<'_> {
    fn drop(&mut self) {
        // SAFETY: `ptr..ptr + len` is exactly the region `mmap` returned, mapped until now, and
        // no reference into it outlives the mapping (none is handed out).
        let _ = unsafe { munmap(self.ptr.cast(), self.len) };
    }
}

/// A GPU virtual address mapping of a whole buffer object; unmapped (`AMDGPU_VA_OP_UNMAP`) on
/// drop, before the object closes.
#[derive(Debug)]
pub struct VaMapping<'b, 'd> {
    bo: &'b Bo<'d>,
    va: u64,
    flags: VmPageFlags,
}

impl VaMapping<'_, '_> {
    /// The GPU virtual address of the object's first byte.
    #[must_use]
    pub fn va(&self) -> u64 {
        self.va
    }

    /// Mapped size in bytes.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.bo.size
    }
}

impl Drop for VaMapping<'_, '_> {
    fn drop(&mut self) {
        // A failed unmap is released with the object; drop cannot report it.
        let _ = self.bo.va_op(AMDGPU_VA_OP_UNMAP, self.va, self.flags);
    }
}

/// A BO list (residency list for a submission); destroyed on drop.
#[derive(Debug)]
pub struct BoList<'d> {
    device: &'d Device,
    handle: u32,
}

impl BoList<'_> {
    /// The list handle for `drm_amdgpu_cs_in::bo_list_handle`.
    #[must_use]
    pub fn handle(&self) -> u32 {
        self.handle
    }
}

impl Drop for BoList<'_> {
    fn drop(&mut self) {
        let mut arg = DrmAmdgpuBoList {
            r#in: DrmAmdgpuBoListIn {
                operation: AMDGPU_BO_LIST_OP_DESTROY,
                list_handle: self.handle,
                bo_number: 0,
                bo_info_size: 0,
                bo_info_ptr: 0,
            },
        };
        // SAFETY: `bo_info_ptr` is null with 0 entries: DESTROY reads no user memory.
        let _ = unsafe { sys::ioctl_with_pointers(self.device.as_fd(), sys::AMDGPU_BO_LIST, &mut arg) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_and_map_va_reach_their_ioctls() {
        let device = Device::open("/dev/null").unwrap();
        // Handle 1 on /dev/null: every ioctl fails with ENOTTY, drop's GEM_CLOSE included.
        let bo = Bo { device: &device, handle: GemHandle(NonZeroU32::MIN), size: 4096 };
        match bo.map() {
            Err(GemError::Ioctl(e)) => assert_eq!(e.ioctl, "DRM_IOCTL_AMDGPU_GEM_MMAP"),
            other => panic!("expected the GEM_MMAP ioctl's error, got {other:?}"),
        }
        match bo.map_va(0x10_0000, VmPageFlags::READABLE) {
            Err(GemError::Ioctl(e)) => assert_eq!(e.ioctl, "DRM_IOCTL_AMDGPU_GEM_VA"),
            other => panic!("expected the GEM_VA ioctl's error, got {other:?}"),
        }
    }

    #[test]
    fn mapping_copies_are_bounds_checked() {
        const LEN: usize = 4096;
        // SAFETY: a fresh private anonymous mapping overlaps no Rust object; `Mapping`'s drop
        // unmaps exactly it.
        let raw = unsafe {
            nix::sys::mman::mmap_anonymous(
                None,
                NonZeroUsize::new(LEN).unwrap(),
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE,
            )
        }
        .unwrap();
        let mut mapping = Mapping { ptr: raw.cast(), len: LEN, bo: PhantomData };
        mapping.write(LEN - 4, &[1, 2, 3, 4]).unwrap();
        let mut back = [0; 4];
        mapping.read(LEN - 4, &mut back).unwrap();
        assert_eq!(back, [1, 2, 3, 4]);
        assert!(matches!(
            mapping.write(LEN - 3, &[0; 4]),
            Err(GemError::OutOfRange { offset: 4093, len: 4, size: LEN })
        ));
        assert!(matches!(mapping.read(usize::MAX, &mut back), Err(GemError::OutOfRange { .. })));
        assert_eq!(mapping.len(), LEN);
        assert!(!mapping.is_empty());
    }
}
