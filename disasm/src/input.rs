//! Reading command streams from files, a bounded piece at a time: little-endian binary or hex
//! text, turned into dwords as they are read, so a stream of any length within
//! [`STREAM_LIMIT`] is decoded in bounded memory. Exactly the bytes the file had when it was
//! opened are read: a file that grows or shrinks while it is read stops the stream with an input
//! error (exit 1) saying so.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek as _, SeekFrom};
use std::path::Path;

/// The largest file `redline disasm` reads: 4 GiB, a billion dwords (it is decoded a window at a time,
/// so the limit bounds time, not memory).
pub const STREAM_LIMIT: infile::Limit = infile::Limit::new("command stream", infile::gib(4));

/// Bytes of the file inspected to guess its format when neither `--format` nor the extension
/// says.
const SNIFF_BYTES: usize = 64 << 10;

/// How the input file encodes its dwords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Raw little-endian bytes (dwords for PM4, 64-byte packets for AQL).
    Bin,
    /// Whitespace- or comma-separated 32-bit words in hex, `0x` optional, `#` starts a comment.
    Hex,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Bin => "bin",
            Format::Hex => "hex",
        })
    }
}

/// Picks a format for a file when none was given: by extension (`.bin`, `.hex`/`.txt`), else
/// `hex` when `start` (the file's first bytes) is printable ASCII text and `bin` otherwise.
pub fn detect(path: &Path, start: &[u8]) -> Format {
    match path.extension().and_then(|e| e.to_str()) {
        Some("bin" | "ib" | "pm4" | "aql") => Format::Bin,
        Some("hex" | "txt") => Format::Hex,
        _ if start.iter().all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace()) => Format::Hex,
        _ => Format::Bin,
    }
}

/// Why reading the stream stopped early.
#[derive(Debug)]
pub enum StreamError {
    /// The content is not valid in its format (exit 1).
    Input(String),
    /// The file could not be read (exit 2).
    Io(std::io::Error),
}

impl From<std::io::Error> for StreamError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

/// A file's dwords, read on demand.
#[derive(Debug)]
pub struct Words {
    source: Source,
}

#[derive(Debug)]
enum Source {
    Bin { reader: BufReader<Sized>, trailing: usize, ended: bool },
    Hex(HexWords<BufReader<Sized>>),
}

/// The file read as the size it had when it was opened: reading past that size (the file grew)
/// or ending before it (it shrank) is an error carrying [`SizeChanged`].
#[derive(Debug)]
struct Sized {
    file: File,
    size: u64,
    read: u64,
}

/// A file whose size moved while it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SizeChanged {
    /// There are more bytes than the file had when it was opened.
    #[error("the file grew while it was read: it had {size} bytes when it was opened")]
    Grew {
        /// Its size when it was opened.
        size: u64,
    },
    /// It ended before the size it had when it was opened.
    #[error("the file shrank while it was read: it ended at byte {read} of the {size} it had when it was opened")]
    Shrank {
        /// Its size when it was opened.
        size: u64,
        /// Where it ended.
        read: u64,
    },
}

impl Read for Sized {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // One byte past the size is enough to see growth.
        let left = self.size.saturating_sub(self.read).saturating_add(1);
        let cap = usize::try_from(left).map_or(buf.len(), |left| left.min(buf.len()));
        let n = self.file.read(&mut buf[..cap])?;
        self.read += n as u64;
        if self.read > self.size {
            return Err(std::io::Error::other(SizeChanged::Grew { size: self.size }));
        }
        if n == 0 && !buf.is_empty() && self.read < self.size {
            return Err(std::io::Error::other(SizeChanged::Shrank { size: self.size, read: self.read }));
        }
        Ok(n)
    }
}

/// A read error as the stream reports it: a size that moved is the input's fault (exit 1), any
/// other error an I/O error (exit 2).
fn stream_error(error: std::io::Error) -> StreamError {
    match error.get_ref().and_then(|inner| inner.downcast_ref::<SizeChanged>()) {
        Some(changed) => StreamError::Input(changed.to_string()),
        None => StreamError::Io(error),
    }
}

impl Words {
    /// Opens `path` ([`STREAM_LIMIT`]) and picks its format (`format`, else [`detect`] on its
    /// first bytes).
    ///
    /// # Errors
    /// The file cannot be opened, is not a regular file, or is over the limit.
    pub fn open(path: &Path, format: Option<Format>) -> Result<Self, infile::ReadError> {
        let (mut file, size) = infile::open(path, STREAM_LIMIT)?;
        let io = |error| infile::ReadError::Io { path: path.to_owned(), error };
        let format = match format {
            Some(format) => format,
            None => {
                let mut start = Vec::with_capacity(SNIFF_BYTES);
                (&mut file).take(SNIFF_BYTES as u64).read_to_end(&mut start).map_err(io)?;
                file.seek(SeekFrom::Start(0)).map_err(io)?;
                detect(path, &start)
            }
        };
        let reader = BufReader::with_capacity(1 << 16, Sized { file, size, read: 0 });
        let source = match format {
            Format::Bin => Source::Bin { reader, trailing: 0, ended: false },
            Format::Hex => Source::Hex(HexWords::new(reader)),
        };
        Ok(Self { source })
    }

    /// Appends up to `max` dwords to `out`; returns how many (0 at the end of the stream).
    ///
    /// # Errors
    /// Invalid hex text (with line and column), or a read failure.
    pub fn read(&mut self, out: &mut Vec<u32>, max: usize) -> Result<usize, StreamError> {
        match &mut self.source {
            Source::Bin { reader, trailing, ended } => {
                let mut n = 0;
                while n < max && !*ended {
                    let buf = reader.fill_buf().map_err(stream_error)?;
                    if buf.is_empty() {
                        *ended = true;
                        break;
                    }
                    let (chunks, _) = buf.as_chunks::<4>();
                    if chunks.is_empty() {
                        // Fewer than 4 bytes buffered: read them one at a time to the next word
                        // (or the end, where they are trailing bytes).
                        let mut word = [0u8; 4];
                        let got = read_full(reader, &mut word).map_err(stream_error)?;
                        if got < 4 {
                            *trailing = got;
                            *ended = true;
                            break;
                        }
                        out.push(u32::from_le_bytes(word));
                        n += 1;
                        continue;
                    }
                    let take = chunks.len().min(max - n);
                    out.extend(chunks[..take].iter().map(|c| u32::from_le_bytes(*c)));
                    reader.consume(take * 4);
                    n += take;
                }
                Ok(n)
            }
            Source::Hex(words) => {
                let mut n = 0;
                while n < max {
                    match words.next() {
                        None => break,
                        Some(Ok(word)) => {
                            out.push(word);
                            n += 1;
                        }
                        Some(Err(HexError::Io(e))) => return Err(stream_error(e)),
                        Some(Err(e)) => return Err(StreamError::Input(format!("invalid hex input: {e}"))),
                    }
                }
                Ok(n)
            }
        }
    }

    /// Bytes at the end of a binary stream that do not fill a dword (known once [`Words::read`]
    /// returned 0).
    #[must_use]
    pub fn trailing_bytes(&self) -> usize {
        match &self.source {
            Source::Bin { trailing, .. } => *trailing,
            Source::Hex(_) => 0,
        }
    }
}

/// Reads into `buf` until it is full or the reader ends; returns the bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The longest token prefix an error message shows.
const SHOWN_TOKEN_BYTES: usize = 24;

/// Why hex text stopped parsing.
#[derive(Debug)]
pub enum HexError {
    /// A token that is not a 32-bit hex word (`shown` is at most its first
    /// [`SHOWN_TOKEN_BYTES`] bytes).
    Token {
        /// 1-based line.
        line: u64,
        /// 1-based byte column.
        column: u64,
        /// The token's first bytes.
        shown: String,
        /// The token's whole length in bytes.
        len: u64,
    },
    /// The reader failed.
    Io(std::io::Error),
}

impl fmt::Display for HexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Token { line, column, shown, len } if *len > shown.len() as u64 => write!(
                f,
                "line {line}, column {column}: the {len}-byte token starting {shown:?}… is not a 32-bit hex word"
            ),
            Self::Token { line, column, shown, .. } => {
                write!(f, "line {line}, column {column}: {shown:?} is not a 32-bit hex word")
            }
            Self::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Hex words from a byte reader: tokens split on ASCII whitespace and commas, optional
/// `0x`/`0X`, at most 8 digits, `#` to the end of the line a comment. Holds at most one token's
/// first bytes at a time.
#[derive(Debug)]
pub struct HexWords<R> {
    reader: R,
    line: u64,
    column: u64,
    failed: bool,
}

impl<R: BufRead> HexWords<R> {
    /// Words from `reader`.
    pub fn new(reader: R) -> Self {
        Self { reader, line: 1, column: 0, failed: false }
    }

    fn byte(&mut self) -> Result<Option<u8>, std::io::Error> {
        let buf = loop {
            match self.reader.fill_buf() {
                Ok(buf) => break buf,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        let Some(&b) = buf.first() else { return Ok(None) };
        self.reader.consume(1);
        if b == b'\n' {
            self.line += 1;
            self.column = 0;
        } else {
            self.column += 1;
        }
        Ok(Some(b))
    }

    fn word(&mut self) -> Result<Option<u32>, HexError> {
        // Skip separators and comments to the first byte of a token.
        let first = loop {
            match self.byte().map_err(HexError::Io)? {
                None => return Ok(None),
                Some(b'#') => loop {
                    match self.byte().map_err(HexError::Io)? {
                        None => return Ok(None),
                        Some(b'\n') => break,
                        Some(_) => {}
                    }
                },
                Some(b) if b.is_ascii_whitespace() || b == b',' => {}
                Some(b) => break b,
            }
        };
        let (line, column) = (self.line, self.column);
        let mut token = vec![first];
        let mut len: u64 = 1;
        loop {
            // Peek: a `#` ends the token and starts a comment, handled by the next call.
            let next = loop {
                match self.reader.fill_buf() {
                    Ok(buf) => break buf.first().copied(),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(HexError::Io(e)),
                }
            };
            match next {
                None | Some(b'#') => break,
                Some(b) if b.is_ascii_whitespace() || b == b',' => break,
                Some(b) => {
                    let _ = self.byte().map_err(HexError::Io)?;
                    len += 1;
                    if token.len() < SHOWN_TOKEN_BYTES {
                        token.push(b);
                    }
                }
            }
        }
        let digits = token.strip_prefix(b"0x").or_else(|| token.strip_prefix(b"0X")).unwrap_or(&token);
        if len > 10 || digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_hexdigit) {
            let shown = String::from_utf8_lossy(&token).into_owned();
            return Err(HexError::Token { line, column, shown, len });
        }
        Ok(Some(digits.iter().fold(0u32, |acc, &d| (acc << 4) | hex_value(d))))
    }
}

/// The value of an ASCII hex digit (checked by the caller).
fn hex_value(d: u8) -> u32 {
    u32::from(match d {
        b'0'..=b'9' => d - b'0',
        b'a'..=b'f' => d - b'a' + 10,
        _ => d - b'A' + 10,
    })
}

impl<R: BufRead> Iterator for HexWords<R> {
    type Item = Result<u32, HexError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.word().transpose();
        if matches!(item, Some(Err(_))) {
            self.failed = true;
        }
        item
    }
}

/// Parses hex words from text held in memory (the same rules as the streaming reader).
///
/// # Errors
/// The first token that is not a 32-bit hex word, with its line and column.
pub fn parse_hex(text: &str) -> Result<Vec<u32>, HexError> {
    HexWords::new(text.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn hex_tokens() {
        let words = parse_hex("# header\n0xC0017600 204, 0X0000000a\n\tdeadBEEF # tail\n1#c\n").unwrap();
        assert_eq!(words, vec![0xC001_7600, 0x204, 0xA, 0xDEAD_BEEF, 1]);
    }

    #[test]
    fn hex_errors_name_the_place() {
        let err = parse_hex("0x1 0x2\n0x3 0xZZ\n").unwrap_err().to_string();
        assert!(err.contains("line 2, column 5"), "{err}");
        assert!(parse_hex("123456789").is_err());
        assert!(parse_hex("0x").is_err());
        assert!(parse_hex("0x0x1").is_err());
        assert!(parse_hex("é").is_err());
    }

    #[test]
    fn a_long_token_is_shown_by_a_prefix_and_its_length() {
        let text = format!("c0001000\n  {}\n", "ab".repeat(5 << 20));
        let err = parse_hex(&text).unwrap_err().to_string();
        assert!(err.starts_with("line 2, column 3: the 10485760-byte token starting \"abababab"), "{err}");
        assert!(err.len() < 120, "{err}");
    }

    /// Reads every dword of `words`; the input error that stopped it, if any.
    fn read_all(words: &mut Words) -> Result<Vec<u32>, String> {
        let mut out = Vec::new();
        loop {
            match words.read(&mut out, 1000) {
                Ok(0) => return Ok(out),
                Ok(_) => {}
                Err(StreamError::Input(message)) => return Err(message),
                Err(StreamError::Io(e)) => panic!("an I/O error: {e}"),
            }
        }
    }

    #[test]
    fn a_file_that_grows_or_shrinks_while_read_stops_the_stream() {
        let dir = std::env::temp_dir().join(format!("redline-disasm-size-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bytes: Vec<u8> = (0..40_000u32).flat_map(u32::to_le_bytes).collect();
        for format in [Format::Bin, Format::Hex] {
            let contents = match format {
                Format::Bin => bytes.clone(),
                Format::Hex => (0..40_000u32).map(|w| format!("{w:08x}\n")).collect::<String>().into_bytes(),
            };
            let path = dir.join(format!("grows.{format}"));
            std::fs::write(&path, &contents).unwrap();
            let mut whole = Words::open(&path, Some(format)).unwrap();
            assert_eq!(read_all(&mut whole).unwrap(), (0..40_000).collect::<Vec<u32>>(), "{format}");

            // Opened, then appended to: the words read stop where the file ended when opened.
            let mut words = Words::open(&path, Some(format)).unwrap();
            let tail = if format == Format::Bin { vec![0u8; 8] } else { b"00000001\n".to_vec() };
            std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(&tail).unwrap();
            let message = read_all(&mut words).unwrap_err();
            assert!(
                message.contains("grew while it was read") && message.contains(&contents.len().to_string()),
                "{message}"
            );

            // Opened, then cut: the end comes early and is said to.
            std::fs::write(&path, &contents).unwrap();
            let mut words = Words::open(&path, Some(format)).unwrap();
            std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(1000).unwrap();
            let message = read_all(&mut words).unwrap_err();
            assert!(message.contains("shrank while it was read: it ended at byte 1000"), "{format}: {message}");
        }
    }

    #[test]
    fn binary_words_and_trailing_bytes() {
        let dir = std::env::temp_dir().join(format!("redline-disasm-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.bin");
        let mut bytes: Vec<u8> = (0u32..100_000).flat_map(u32::to_le_bytes).collect();
        bytes.extend([7, 7, 7]);
        std::fs::write(&path, &bytes).unwrap();
        let mut words = Words::open(&path, None).unwrap();
        let mut all = Vec::new();
        while words.read(&mut all, 4093).unwrap() > 0 {}
        assert_eq!(all, (0u32..100_000).collect::<Vec<_>>());
        assert_eq!(words.trailing_bytes(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn detection() {
        assert_eq!(detect(Path::new("a.bin"), b"text"), Format::Bin);
        assert_eq!(detect(Path::new("a.dat"), b"0xc0017600\n"), Format::Hex);
        assert_eq!(detect(Path::new("a.dat"), &[0, 0x76, 1, 0xC0]), Format::Bin);
    }
}
