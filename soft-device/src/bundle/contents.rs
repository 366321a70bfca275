//! The bundle's files against its manifest: presence, kind, size, and what the IB and the AQL
//! packets say about the manifest's VAs and patch sites.

use std::path::{Path, PathBuf};

use infile::{Limit, ReadError};
use pm4_encoding::{Decoder, Packet};

use super::{Bundle, BundleError, PatchKind, Role, shown};

/// The files [`Bundle::run`] uses as read by the check.
pub(super) struct Checked {
    /// The IB's bytes, `4 * size_dwords` of them.
    pub(super) ib: Vec<u8>,
    /// The AQL packets, `64 * packets` bytes.
    pub(super) aql: Vec<u8>,
}

impl Bundle {
    /// Opens `file` of the bundle without reading it ([`infile::resolve_inside`],
    /// [`infile::open`]); returns its size.
    fn probe(&self, at: &str, file: &str, limit: Limit) -> Result<u64, BundleError> {
        let read = |source| BundleError::Read { at: at.to_owned(), source };
        let (joined, resolved): (PathBuf, PathBuf) =
            infile::resolve_inside(&self.dir, Path::new(file)).map_err(read)?;
        let (_, size) = infile::open(&resolved, limit).map_err(|e| read(e.about(&joined)))?;
        Ok(size)
    }

    /// The bytes of `file` of the bundle, at most `limit` ([`infile::read_inside`]).
    pub(super) fn read(&self, at: &str, file: &str, limit: Limit) -> Result<Vec<u8>, BundleError> {
        infile::read_inside(&self.dir, Path::new(file), limit)
            .map_err(|source| BundleError::Read { at: at.to_owned(), source })
    }

    /// A too-large error of a file that must be `declared` bytes, as the size mismatch it is.
    fn sized(at: &str, file: &str, what: &str, declared: u64, e: BundleError) -> BundleError {
        match e {
            BundleError::Read { source: ReadError::TooLarge { size, .. }, .. } => BundleError::SizeMismatch {
                at: at.to_owned(),
                file: shown(file),
                what: what.to_owned(),
                declared,
                actual: size,
            },
            other => other,
        }
    }

    /// Checks that `file` is exactly `declared` bytes without reading it.
    fn probe_sized(&self, at: &str, file: &str, what: &str, declared: u64) -> Result<(), BundleError> {
        let size = self
            .probe(at, file, Limit::new("declared size", declared))
            .map_err(|e| Self::sized(at, file, what, declared, e))?;
        if size != declared {
            return Err(BundleError::SizeMismatch {
                at: at.to_owned(),
                file: shown(file),
                what: what.to_owned(),
                declared,
                actual: size,
            });
        }
        Ok(())
    }

    /// The bytes of `file`, which must be exactly `declared` of them.
    pub(super) fn read_sized(&self, at: &str, file: &str, what: &str, declared: u64) -> Result<Vec<u8>, BundleError> {
        let bytes = self
            .read(at, file, Limit::new("declared size", declared))
            .map_err(|e| Self::sized(at, file, what, declared, e))?;
        let actual = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if actual != declared {
            return Err(BundleError::SizeMismatch {
                at: at.to_owned(),
                file: shown(file),
                what: what.to_owned(),
                declared,
                actual,
            });
        }
        Ok(bytes)
    }

    /// [`Bundle::check`]; the IB and AQL bytes it read.
    pub(super) fn check_files(&self) -> Result<Checked, BundleError> {
        let m = &self.manifest;
        for (i, co) in m.code_objects.iter().enumerate() {
            self.probe(
                &format!("code_objects[{i}].file"),
                &co.file,
                Limit::new("code object", super::CODE_OBJECT_BYTES_MAX),
            )?;
        }
        for (i, r) in m.regions.iter().enumerate() {
            if let Some(f) = &r.file {
                self.probe_sized(&format!("regions[{i}].file"), f, &format!("region {}", shown(&r.name)), r.size)?;
            }
        }
        for (i, e) in m.expected.iter().enumerate() {
            // validate() checked that every expected result names a region.
            if let Some(r) = m.regions.iter().find(|r| r.name == e.region) {
                self.probe_sized(
                    &format!("expected[{i}].file"),
                    &e.file,
                    &format!("region {}", shown(&r.name)),
                    r.size,
                )?;
            }
        }
        let ib = self.read_sized("ib.file", &m.ib.file, "ib.size_dwords * 4", u64::from(m.ib.size_dwords) * 4)?;
        let aql = self.read_sized("aql.file", &m.aql.file, "aql.packets * 64", u64::from(m.aql.packets) * 64)?;
        self.check_aql(&aql)?;
        self.check_dispatch_sites(&ib)?;
        Ok(Checked { ib, aql })
    }

    /// Every vendor PM4-IB packet calls `ib.va` with at most `ib.size_dwords` dwords; every
    /// completion signal named is a signal region. Packets that do not decode are the device's to
    /// report.
    fn check_aql(&self, aql: &[u8]) -> Result<(), BundleError> {
        let m = &self.manifest;
        let (packets, _) = aql.as_chunks::<64>();
        for (i, bytes) in packets.iter().enumerate() {
            let Ok(packet) = aql_packets::decode(bytes) else { continue };
            if let aql_packets::AqlPacket::AmdPm4Ib(p) = &packet {
                if p.ib.address != m.ib.va.0 {
                    return Err(BundleError::IbVa {
                        file: shown(&m.aql.file),
                        packet: i,
                        called: p.ib.address,
                        manifest: m.ib.va.0,
                    });
                }
                let called = p.ib.control.ib_size();
                if called > m.ib.size_dwords {
                    return Err(BundleError::Content {
                        at: "ib.size_dwords".into(),
                        message: format!(
                            "{} packet {i} calls {called} dwords of the IB, but ib.size_dwords is {}: a packet may \
                             call at most the whole IB",
                            shown(&m.aql.file),
                            m.ib.size_dwords
                        ),
                    });
                }
            }
            if let Some(signal) = packet.completion_signal().filter(|&s| s != 0)
                && !m.regions.iter().any(|r| r.role == Role::Signal && r.va.0 == signal)
            {
                return Err(BundleError::Content {
                    at: "regions".into(),
                    message: format!(
                        "{} packet {i} names completion signal {signal:#x}, which no signal region's va gives",
                        shown(&m.aql.file)
                    ),
                });
            }
        }
        Ok(())
    }

    /// Every `dispatch_dim` site is body dword 1, 2 or 3 of a `DISPATCH_DIRECT` packet of the IB
    /// (validate() checked that it lies inside the IB, dword aligned).
    fn check_dispatch_sites(&self, ib: &[u8]) -> Result<(), BundleError> {
        let m = &self.manifest;
        let mut sites: Vec<(usize, usize)> = m
            .patch_sites
            .iter()
            .enumerate()
            .filter(|(_, s)| s.kind == PatchKind::DispatchDim)
            .filter_map(|(i, s)| {
                let dword = s.va.0.checked_sub(m.ib.va.0)? / 4;
                Some((usize::try_from(dword).ok()?, i))
            })
            .collect();
        if sites.is_empty() {
            return Ok(());
        }
        sites.sort_unstable();
        let words: Vec<u32> = ib.as_chunks::<4>().0.iter().map(|w| u32::from_le_bytes(*w)).collect();
        let rule = "a dispatch_dim site must be DIM_X, DIM_Y or DIM_Z (body dword 1 to 3) of a DISPATCH_DIRECT packet";
        let bad = |i: usize, dword: usize, what: String| BundleError::Content {
            at: format!("patch_sites[{i}].va"),
            message: format!(
                "{:#x} is dword {dword} of the IB {}, {what}: {rule}",
                m.patch_sites[i].va.0,
                shown(&m.ib.file)
            ),
        };
        let mut next = sites.iter().peekable();
        for decoded in Decoder::new(&words) {
            let d = match decoded {
                Ok(d) => d,
                Err(e) => {
                    let Some(&&(dword, i)) = next.peek() else { return Ok(()) };
                    return Err(bad(
                        i,
                        dword,
                        format!("which cannot be placed: the IB does not decode from dword {}: {e}", e.offset()),
                    ));
                }
            };
            let end = d.offset + d.words.len();
            while let Some(&&(dword, i)) = next.peek().filter(|(dword, _)| *dword < end) {
                let name = d.packet.opcode().map_or_else(|| "type-0/type-2".to_owned(), |o| o.to_string());
                if dword == d.offset {
                    return Err(bad(i, dword, format!("the header of the {name} packet at IB dword {}", d.offset)));
                }
                let body = dword - d.offset;
                if !matches!(d.packet, Packet::DispatchDirect(_)) || !(1..=3).contains(&body) {
                    return Err(bad(
                        i,
                        dword,
                        format!("body dword {body} of the {name} packet at IB dword {}", d.offset),
                    ));
                }
                next.next();
            }
            if next.peek().is_none() {
                return Ok(());
            }
        }
        match next.next() {
            // validate() keeps every site inside the IB, whose every dword the decoder covers.
            Some(&(dword, i)) => Err(bad(i, dword, "past the last packet of the IB".into())),
            None => Ok(()),
        }
    }
}
