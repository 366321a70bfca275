//! Sealed snapshots: a file's bytes copied once, through the descriptor that was opened and
//! checked, into memory nobody can change afterwards, hashed as they are copied.
//!
//! A parser that maps a file trusts every other process that can write it: a truncation turns
//! the lost pages into `SIGBUS` for whoever touches them, and a rewrite changes bytes under a
//! layout that was already validated. A digest computed in one pass and bytes read in another
//! prove nothing about each other. A [`Snapshot`] closes both gaps:
//!
//! 1. [`Opened::open`] opens the path once (non-blocking, regular files only, within a size
//!    limit) and keeps the descriptor, its size and its modification time;
//! 2. the caller reads and judges the first bytes ([`Opened::prefix`]) before anything large is
//!    read, so a file of the wrong kind is refused at once;
//! 3. [`Opened::snapshot`] copies exactly `size` bytes from that descriptor into an anonymous
//!    `memfd`, feeding the same buffers to SHA-256, then seals it (`F_SEAL_WRITE`,
//!    `F_SEAL_GROW`, `F_SEAL_SHRINK` and `F_SEAL_SEAL`) and maps the sealed file read-only.
//!    The file ending early is a [`ReadError::ShortRead`], the file having more bytes than it had
//!    when it was opened a [`ReadError::Grew`], and a modification time or size that moved
//!    during the copy a [`ReadError::Changed`]: each names the file.
//!
//! Everything parsed and run afterwards comes from [`Snapshot::bytes`], and
//! [`Snapshot::sha256`] is the digest of exactly those bytes. Whatever happens to the file later
//! (truncated, rewritten, replaced) changes nothing the snapshot holds, and touching it can never
//! fault: the seals forbid every write, shrink and growth, by this process or any other that
//! reaches the memfd through `/proc`.
//!
//! # Memory
//! A snapshot holds the whole file in memory: the memfd's pages are shared memory, backed by
//! RAM or swap like any anonymous memory, and mapped once (no second copy). A caller that loads
//! a model onto the soft device holds it twice while the weights upload (the snapshot and the
//! device's copy), so [`memory_budget`] is half of this machine's memory (the smaller of
//! `MemTotal` and the process's cgroup `memory.max`), and a file larger than the budget is
//! refused by name ([`ReadError::OverBudget`]) before a byte of it is copied.
//!
//! # Where memfd is unavailable
//! On a kernel without `memfd_create` (`ENOSYS`), or where a sandbox refuses it (`EPERM`,
//! `EACCES`) or refuses sealing (`EINVAL`), [`Backing::SealedMemfd`] falls back to
//! [`Backing::Heap`]: the same copy and the same digest into memory this process allocates and
//! never hands out mutably. The guarantees are the same for this process (no other process can
//! reach a private heap at all); what is lost is the descriptor another process could be given.
//! [`Snapshot::backing`] says which one a snapshot has. Any other failure to create, write,
//! seal or map the memfd is an error, not a fallback.

use std::fs::File;
use std::io::Write as _;
use std::os::fd::{AsFd as _, BorrowedFd};
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::{Limit, ReadError};

/// Bytes copied per read: large enough that the copy runs at the speed of the page cache, small
/// enough to be a rounding error next to a model.
const CHUNK_BYTES: usize = 1 << 20;

/// The seals every snapshot carries: no write, no growth, no shrinking, and no change of seals.
const SEALS: rustix::fs::SealFlags = rustix::fs::SealFlags::WRITE
    .union(rustix::fs::SealFlags::GROW)
    .union(rustix::fs::SealFlags::SHRINK)
    .union(rustix::fs::SealFlags::SEAL);

/// Where a snapshot's bytes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// A sealed `memfd`, mapped read-only (Linux). The default; falls back to [`Backing::Heap`]
    /// where memfd is unavailable (see the [module documentation](self)).
    SealedMemfd,
    /// Memory of this process's heap.
    Heap,
}

/// What [`Opened::snapshot`] may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotOptions {
    /// The most bytes a snapshot may hold; a larger file is refused before the copy.
    /// `None`: no bound (when this machine's memory could not be read).
    pub budget_bytes: Option<u64>,
    /// The backing to use (or to fall back from).
    pub backing: Backing,
}

impl Default for SnapshotOptions {
    /// A sealed memfd within [`memory_budget`].
    fn default() -> Self {
        Self { budget_bytes: memory_budget(), backing: Backing::SealedMemfd }
    }
}

/// What tells a changed file without reading it: its size and modification time. (Not its
/// change time, which moves when the file is renamed or unlinked, leaving the bytes the
/// descriptor reads as they were.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    size: u64,
    modified_ns: i128,
}

impl Stamp {
    fn of(file: &File) -> std::io::Result<Self> {
        let meta = file.metadata()?;
        let ns = |s: i64, ns: i64| i128::from(s) * 1_000_000_000 + i128::from(ns);
        Ok(Self { size: meta.len(), modified_ns: ns(meta.mtime(), meta.mtime_nsec()) })
    }
}

/// A regular file opened once for a snapshot: its descriptor, and its size and modification time
/// when it was opened. Every read goes through this descriptor at explicit offsets, so an
/// [`Opened`] can be snapshotted again later (a file renamed over or unlinked meanwhile is still
/// the one opened).
#[derive(Debug)]
pub struct Opened {
    path: PathBuf,
    file: File,
    stamp: Stamp,
}

impl Opened {
    /// Opens `path` as [`crate::open`] does (non-blocking, a regular file, at most `limit`
    /// bytes); nothing is read.
    ///
    /// # Errors
    /// As [`crate::open`].
    pub fn open(path: &Path, limit: Limit) -> Result<Self, ReadError> {
        let (file, _) = crate::open(path, limit)?;
        let stamp = Stamp::of(&file).map_err(|error| ReadError::Io { path: path.to_owned(), error })?;
        Ok(Self { path: path.to_owned(), file, stamp })
    }

    /// The path it was opened as.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its size in bytes when it was opened.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.stamp.size
    }

    /// The file's first `min(len, size)` bytes, for judging the file before anything large is
    /// read.
    ///
    /// # Errors
    /// [`ReadError::ShortRead`] when the file has lost them since it was opened;
    /// [`ReadError::Io`].
    pub fn prefix(&self, len: usize) -> Result<Vec<u8>, ReadError> {
        let len = usize::try_from(self.size()).map_or(len, |size| size.min(len));
        let mut bytes = vec![0; len];
        self.read_exact_at(&mut bytes, 0)?;
        Ok(bytes)
    }

    /// Whether the file still has the size and modification time it had when it was opened
    /// (one `fstat`, no read).
    ///
    /// # Errors
    /// [`ReadError::Changed`] naming what differs; [`ReadError::Io`].
    pub fn check_unchanged(&self) -> Result<(), ReadError> {
        let now = Stamp::of(&self.file).map_err(|error| self.io(error))?;
        let detail = if now.size != self.stamp.size {
            format!("it was {} bytes and is now {}", self.stamp.size, now.size)
        } else if now != self.stamp {
            "its modification time moved: it was written to".to_owned()
        } else {
            return Ok(());
        };
        Err(ReadError::Changed { path: self.path.clone(), detail })
    }

    /// The SHA-256 of the file's bytes, read once through this descriptor without keeping them
    /// (a check of a file against a pinned digest). The same reads as [`Opened::snapshot`]:
    /// exactly [`Opened::size`] bytes, refused if the file ends sooner, has more, or changes.
    ///
    /// # Errors
    /// As [`Opened::snapshot`], but never [`ReadError::OverBudget`].
    pub fn sha256(&self) -> Result<[u8; 32], ReadError> {
        let mut hasher = Sha256::new();
        let mut buf = vec![0; CHUNK_BYTES];
        self.copy(&mut buf, |chunk| {
            hasher.update(chunk);
            Ok(())
        })?;
        Ok(hasher.finalize().into())
    }

    /// Copies the file into a sealed snapshot while hashing it (see the [module
    /// documentation](self)).
    ///
    /// # Errors
    /// [`ReadError::OverBudget`] before anything is read; [`ReadError::ShortRead`],
    /// [`ReadError::Grew`] or [`ReadError::Changed`] when the file changed while it was copied;
    /// [`ReadError::Io`] when reading it, or creating, writing, sealing or mapping the memfd,
    /// failed.
    pub fn snapshot(&self, options: &SnapshotOptions) -> Result<Snapshot, ReadError> {
        let size = self.size();
        if let Some(budget) = options.budget_bytes
            && size > budget
        {
            return Err(ReadError::OverBudget { path: self.path.clone(), size, budget });
        }
        let memfd = match options.backing {
            // An empty file has nothing to map (a zero-length mapping is refused).
            Backing::SealedMemfd if size > 0 => memfd_or_fallback(sys::memfd_create()).map_err(|e| self.io(e))?,
            _ => None,
        };
        let (held, sha256) = match memfd {
            Some(memfd) => self.copy_sealed(memfd)?,
            None => self.copy_heap()?,
        };
        Ok(Snapshot { held, sha256, path: self.path.clone() })
    }

    fn copy_sealed(&self, memfd: File) -> Result<(Held, [u8; 32]), ReadError> {
        let mut hasher = Sha256::new();
        let mut buf = vec![0; CHUNK_BYTES];
        let mut out = &memfd;
        self.copy(&mut buf, |chunk| {
            hasher.update(chunk);
            out.write_all(chunk)
        })?;
        rustix::fs::fcntl_add_seals(&memfd, SEALS).map_err(|e| self.io(e.into()))?;
        let map = sys::map_sealed(&memfd, self.size()).map_err(|e| self.io(e))?;
        Ok((Held::Sealed { map, memfd }, hasher.finalize().into()))
    }

    fn copy_heap(&self) -> Result<(Held, [u8; 32]), ReadError> {
        let len =
            usize::try_from(self.size()).map_err(|_| self.io(std::io::Error::from(std::io::ErrorKind::OutOfMemory)))?;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(len).map_err(|_| self.io(std::io::Error::from(std::io::ErrorKind::OutOfMemory)))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0; CHUNK_BYTES.min(len)];
        self.copy(&mut buf, |chunk| {
            hasher.update(chunk);
            bytes.extend_from_slice(chunk);
            Ok(())
        })?;
        Ok((Held::Heap(bytes), hasher.finalize().into()))
    }

    /// Reads exactly [`Opened::size`] bytes from offset 0 through `buf`, handing each piece to
    /// `sink`; then requires the file to end there and to be unchanged.
    fn copy(&self, buf: &mut [u8], mut sink: impl FnMut(&[u8]) -> std::io::Result<()>) -> Result<(), ReadError> {
        let size = self.size();
        let mut done = 0u64;
        while done < size {
            let want = usize::try_from(size - done).map_or(buf.len(), |left| left.min(buf.len()));
            let n = self.read_at(&mut buf[..want], done)?;
            if n == 0 {
                return Err(ReadError::ShortRead { path: self.path.clone(), expected: size, read: done });
            }
            sink(&buf[..n]).map_err(|e| self.io(e))?;
            done += n as u64;
        }
        let mut one = [0u8; 1];
        if self.read_at(&mut one, size)? != 0 {
            return Err(ReadError::Grew { path: self.path.clone(), expected: size });
        }
        self.check_unchanged()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<(), ReadError> {
        let mut done = 0;
        while done < buf.len() {
            let n = self.read_at(&mut buf[done..], offset + done as u64)?;
            if n == 0 {
                let expected = offset + buf.len() as u64;
                return Err(ReadError::ShortRead { path: self.path.clone(), expected, read: offset + done as u64 });
            }
            done += n;
        }
        Ok(())
    }

    /// One `pread`, retried when interrupted.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize, ReadError> {
        loop {
            match self.file.read_at(buf, offset) {
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                result => return result.map_err(|e| self.io(e)),
            }
        }
    }

    fn io(&self, error: std::io::Error) -> ReadError {
        ReadError::Io { path: self.path.clone(), error }
    }
}

/// The memfd to copy into, `None` to use the heap: `memfd_create`'s result, with the errors that
/// mean "not available here" (see the [module documentation](self)) turned into the fallback.
///
/// # Errors
/// Any other error of `memfd_create` (out of descriptors, out of memory).
pub fn memfd_or_fallback(created: std::io::Result<File>) -> std::io::Result<Option<File>> {
    match created {
        Ok(file) => Ok(Some(file)),
        Err(error)
            if matches!(error.raw_os_error(), Some(libc::ENOSYS | libc::EPERM | libc::EACCES | libc::EINVAL)) =>
        {
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// The bytes a [`Snapshot`] holds.
enum Held {
    /// The sealed memfd and its read-only mapping (which must not outlive it; they drop
    /// together).
    Sealed {
        map: memmap2::Mmap,
        memfd: File,
    },
    Heap(Vec<u8>),
}

/// A file's bytes, copied once and sealed, with the SHA-256 of exactly those bytes (see the
/// [module documentation](self)).
pub struct Snapshot {
    held: Held,
    sha256: [u8; 32],
    path: PathBuf,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("path", &self.path)
            .field("bytes", &self.bytes().len())
            .field("backing", &self.backing())
            .field("sha256", &self.sha256_hex())
            .finish()
    }
}

impl Snapshot {
    /// The bytes, exactly as read from the file.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        match &self.held {
            Held::Sealed { map, .. } => map,
            Held::Heap(bytes) => bytes,
        }
    }

    /// The SHA-256 of [`Snapshot::bytes`], computed over the same buffers as they were copied.
    #[must_use]
    pub fn sha256(&self) -> &[u8; 32] {
        &self.sha256
    }

    /// [`Snapshot::sha256`] as lowercase hex.
    #[must_use]
    pub fn sha256_hex(&self) -> String {
        hex(&self.sha256)
    }

    /// The file the snapshot was taken of.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the bytes live.
    #[must_use]
    pub fn backing(&self) -> Backing {
        match self.held {
            Held::Sealed { .. } => Backing::SealedMemfd,
            Held::Heap(_) => Backing::Heap,
        }
    }

    /// The sealed memfd, for handing the same bytes to another process; `None` for a heap
    /// snapshot.
    #[must_use]
    pub fn memfd(&self) -> Option<BorrowedFd<'_>> {
        match &self.held {
            Held::Sealed { memfd, .. } => Some(memfd.as_fd()),
            Held::Heap(_) => None,
        }
    }
}

/// Bytes as lowercase hex (digests).
#[must_use]
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The most bytes a snapshot may hold on this machine: half of its memory, the smaller of
/// `MemTotal` (`/proc/meminfo`) and the process's cgroup v2 `memory.max`; `None` when neither
/// can be read (no bound is then applied).
#[must_use]
pub fn memory_budget() -> Option<u64> {
    let total = read_text(Path::new("/proc/meminfo")).and_then(|text| mem_total_bytes(&text));
    let cgroup = read_text(Path::new("/proc/self/cgroup"))
        .and_then(|text| cgroup_v2_dir(&text).map(|dir| Path::new("/sys/fs/cgroup").join(dir).join("memory.max")))
        .and_then(|path| read_text(&path))
        .and_then(|text| text.trim().parse::<u64>().ok());
    let memory = match (total, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    memory.map(|bytes| bytes / 2)
}

fn read_text(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// The cgroup v2 directory of a `/proc/self/cgroup` text (the `0::/path` line), relative.
fn cgroup_v2_dir(text: &str) -> Option<&str> {
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some(path.trim_start_matches('/'))
}

/// Creating the memfd and mapping it once sealed: the crate's one `unsafe` block, the mapping.
#[allow(unsafe_code)]
mod sys {
    use std::fs::File;

    /// An anonymous memfd that accepts seals, closed on `exec`.
    pub(super) fn memfd_create() -> std::io::Result<File> {
        use rustix::fs::MemfdFlags;
        let fd = rustix::fs::memfd_create(c"redline-snapshot", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
        Ok(File::from(fd))
    }

    /// Maps `memfd` read-only, after checking that it carries every seal of [`super::SEALS`]
    /// and is `size` bytes long.
    pub(super) fn map_sealed(memfd: &File, size: u64) -> std::io::Result<memmap2::Mmap> {
        let seals = rustix::fs::fcntl_get_seals(memfd)?;
        if !seals.contains(super::SEALS) {
            return Err(std::io::Error::other(format!("the snapshot's memfd is not sealed ({seals:?})")));
        }
        if memfd.metadata()?.len() != size {
            return Err(std::io::Error::other("the snapshot's memfd is not the file's size"));
        }
        // SAFETY: `Mmap::map` is unsafe because Rust's `&[u8]` over the mapping assumes the bytes
        // never change and stay mapped, which a writer or a truncation of the file would break.
        // The seals just checked make both impossible for every process: `F_SEAL_WRITE` refuses
        // every `write` and every new writable shared mapping (and this process made none: the
        // bytes went in by `write`, before the seal, which the kernel refuses to add while a
        // writable mapping exists); `F_SEAL_SHRINK` refuses every truncation, so no mapped page
        // ever loses its backing (no `SIGBUS`); `F_SEAL_GROW` and `F_SEAL_SEAL` keep the length
        // and the seals as they are. The mapping is read-only and `Held::Sealed` keeps the memfd
        // alive beside it; every slice of it borrows the `Snapshot`.
        let map = unsafe { memmap2::Mmap::map(memfd) }?;
        if map.len() as u64 != size {
            return Err(std::io::Error::other("the snapshot's mapping is not the file's size"));
        }
        Ok(map)
    }
}

#[cfg(test)]
mod tests;
