//! Zip archives for the tests, written byte by byte from PKWARE APPNOTE 6.3.x section 4.3,
//! independently of the reader in `model_files::zip`.

use model_files::zip::Crc32;

/// One member of a test archive: name, data, and whether to deflate it.
pub(crate) struct Entry<'a> {
    pub(crate) name: &'a str,
    pub(crate) data: &'a [u8],
    pub(crate) deflate: bool,
}

/// CRC-32 of `data` (the reader's `Crc32`, itself checked against the standard check value in
/// `zip_member.rs`).
pub(crate) fn crc(data: &[u8]) -> u32 {
    let mut c = Crc32::new();
    c.update(data);
    c.finish()
}

fn le16(v: usize) -> [u8; 2] {
    u16::try_from(v).unwrap().to_le_bytes()
}

fn le32(v: usize) -> [u8; 4] {
    u32::try_from(v).unwrap().to_le_bytes()
}

/// A zip archive laid out as APPNOTE 4.3 says, written independently of the reader.
#[must_use]
pub(crate) fn build_zip(entries: &[Entry<'_>], comment: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for e in entries {
        let body = if e.deflate { miniz_oxide::deflate::compress_to_vec(e.data, 6) } else { e.data.to_vec() };
        let method: usize = if e.deflate { 8 } else { 0 };
        let offset = out.len();
        let common = |v: &mut Vec<u8>| {
            v.extend(le16(20)); // version needed
            v.extend(le16(0)); // flags
            v.extend(le16(method));
            v.extend([0; 4]); // time, date
            v.extend(crc(e.data).to_le_bytes());
            v.extend(le32(body.len()));
            v.extend(le32(e.data.len()));
            v.extend(le16(e.name.len()));
            v.extend(le16(0)); // extra field length
        };
        out.extend(0x0403_4b50u32.to_le_bytes());
        common(&mut out);
        out.extend(e.name.as_bytes());
        out.extend(&body);
        central.extend(0x0201_4b50u32.to_le_bytes());
        central.extend(le16(20)); // version made by
        common(&mut central);
        central.extend(le16(0)); // comment length
        central.extend([0; 8]); // disk, internal and external attributes
        central.extend(le32(offset));
        central.extend(e.name.as_bytes());
    }
    let cd_offset = out.len();
    out.extend(&central);
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0; 4]); // disk numbers
    out.extend(le16(entries.len()));
    out.extend(le16(entries.len()));
    out.extend(le32(central.len()));
    out.extend(le32(cd_offset));
    out.extend(le16(comment.len()));
    out.extend(comment);
    out
}
