//! What the manifest alone must satisfy (the bundle module's documentation lists the rules).

use super::rule::Rule;
use super::{
    AQL_PACKETS_MAX, BundleError, CODE_OBJECTS_MAX, DEVICE_BYTES_MAX, DTYPES, FILE_NAME_BYTES_MAX, FORMAT, Manifest,
    PATCH_SITES_MAX, PatchKind, REGIONS_MAX, Role, is_inside, shown,
};
use crate::memory::SimMemory;

/// A memory span the manifest places: a region other than a signal, or the IB.
#[derive(Clone, Debug)]
struct Span {
    va: u64,
    end: u64,
    /// `regions[i]` or `None` for the IB.
    region: Option<usize>,
}

fn invalid(at: impl Into<String>, message: impl Into<String>) -> BundleError {
    BundleError::Invalid { at: at.into(), message: message.into() }
}

impl Manifest {
    /// The spans' label for messages.
    fn label(&self, span: &Span) -> String {
        match span.region {
            Some(i) => format!("regions[{i}] ({})", shown(&self.regions[i].name)),
            None => "the IB".into(),
        }
    }

    /// Checks what serde cannot: format, target, limits, names, relative paths, sizes, VAs,
    /// dtypes, patch-site rules and places, expected results ([module documentation](super)).
    ///
    /// # Errors
    /// [`BundleError::Invalid`] naming the field's JSON path, its value and the rule it breaks.
    pub fn validate(&self) -> Result<pm4_encoding::Target, BundleError> {
        if self.format != FORMAT {
            return Err(invalid("format", format!("{} is not the supported format {FORMAT:?}", shown(&self.format))));
        }
        let Ok(target) = self.arch.parse::<pm4_encoding::Target>() else {
            let known: Vec<&str> = pm4_encoding::Target::ALL.iter().map(|t| t.name()).collect();
            return Err(invalid(
                "arch",
                format!("{} is not a supported target (one of {})", shown(&self.arch), known.join(", ")),
            ));
        };
        for (field, count, limit) in [
            ("regions", self.regions.len(), REGIONS_MAX),
            ("code_objects", self.code_objects.len(), CODE_OBJECTS_MAX),
            ("patch_sites", self.patch_sites.len(), PATCH_SITES_MAX),
            ("expected", self.expected.len(), REGIONS_MAX),
        ] {
            if count > limit {
                return Err(invalid(field, format!("{count} entries, more than the limit of {limit}")));
            }
        }
        self.validate_files()?;
        self.validate_ib_and_aql()?;
        let spans = self.validate_regions()?;
        self.validate_patch_sites(&spans)?;
        self.validate_expected()?;
        Ok(target)
    }

    fn validate_files(&self) -> Result<(), BundleError> {
        let mut files: Vec<(String, &str)> =
            vec![("ib.file".into(), &self.ib.file), ("aql.file".into(), &self.aql.file)];
        files.extend(
            self.code_objects.iter().enumerate().map(|(i, c)| (format!("code_objects[{i}].file"), c.file.as_str())),
        );
        files.extend(
            self.regions
                .iter()
                .enumerate()
                .filter_map(|(i, r)| Some((format!("regions[{i}].file"), r.file.as_deref()?))),
        );
        files.extend(self.expected.iter().enumerate().map(|(i, e)| (format!("expected[{i}].file"), e.file.as_str())));
        for (at, f) in files {
            if f.len() > FILE_NAME_BYTES_MAX {
                return Err(invalid(
                    at,
                    format!("{} is longer than the limit of {FILE_NAME_BYTES_MAX} bytes for a file name", shown(f)),
                ));
            }
            // A control character (a NUL above all, which no file name can hold) or a trailing
            // `/` (a directory's name) makes the manifest wrong, whatever the bundle holds.
            if f.chars().any(char::is_control) {
                return Err(invalid(
                    at,
                    format!("{} holds a control character, which no file name of a bundle may", shown(f)),
                ));
            }
            if f.ends_with('/') {
                return Err(invalid(at, format!("{} ends with `/`: it names a directory, not a file", shown(f))));
            }
            if !is_inside(f) {
                return Err(invalid(
                    at,
                    format!("{} is not a relative path inside the bundle (no root, no `..`, not empty)", shown(f)),
                ));
            }
        }
        Ok(())
    }

    fn validate_ib_and_aql(&self) -> Result<(), BundleError> {
        let dwords_max = DEVICE_BYTES_MAX / 4;
        if self.ib.size_dwords == 0 || u64::from(self.ib.size_dwords) > dwords_max {
            return Err(invalid(
                "ib.size_dwords",
                format!("{} is outside 1..={dwords_max} (the soft device's memory budget)", self.ib.size_dwords),
            ));
        }
        if self.aql.packets == 0 || self.aql.packets > AQL_PACKETS_MAX {
            return Err(invalid("aql.packets", format!("{} is outside 1..={AQL_PACKETS_MAX}", self.aql.packets)));
        }
        Ok(())
    }

    /// The region and IB spans, sorted by VA and checked for range, alignment, overlaps and the
    /// device budget.
    fn validate_regions(&self) -> Result<Vec<Span>, BundleError> {
        let mut names: Vec<(&str, usize)> =
            self.regions.iter().enumerate().map(|(i, r)| (r.name.as_str(), i)).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(invalid(
                format!("regions[{}].name", w[1].1),
                format!("{} is also the name of regions[{}]: region names must be unique", shown(w[0].0), w[0].1),
            ));
        }
        let mut signals: Vec<(u64, usize)> = Vec::new();
        let mut spans = Vec::new();
        for (i, r) in self.regions.iter().enumerate() {
            if r.size == 0 || r.size > DEVICE_BYTES_MAX {
                return Err(invalid(
                    format!("regions[{i}].size"),
                    format!("{} is outside 1..={DEVICE_BYTES_MAX} (the soft device's memory budget)", r.size),
                ));
            }
            if let Some(dtype) = &r.dtype {
                let Some(&(_, element)) = DTYPES.iter().find(|(name, _)| name == dtype) else {
                    let known: Vec<&str> = DTYPES.iter().map(|(n, _)| *n).collect();
                    return Err(invalid(
                        format!("regions[{i}].dtype"),
                        format!("{} is not a known dtype (one of {})", shown(dtype), known.join(", ")),
                    ));
                };
                if !r.size.is_multiple_of(element) {
                    return Err(invalid(
                        format!("regions[{i}].size"),
                        format!("{} is not a whole number of {dtype} elements ({element} bytes each)", r.size),
                    ));
                }
            }
            if r.role == Role::Signal {
                if r.size != 8 {
                    return Err(invalid(
                        format!("regions[{i}].size"),
                        format!("{} is not 8: a signal region holds one i64", r.size),
                    ));
                }
                if r.va.0 == 0 {
                    return Err(invalid(format!("regions[{i}].va"), "0 is not a signal handle (0 means no signal)"));
                }
                signals.push((r.va.0, i));
                continue;
            }
            spans.push(place(&format!("regions[{i}]"), r.va.0, r.size, Some(i))?);
        }
        signals.sort_unstable();
        if let Some(w) = signals.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(invalid(
                format!("regions[{}].va", w[1].1),
                format!(
                    "{:#x} is also the handle of signal regions[{}]: signal handles must be unique",
                    w[0].0, w[0].1
                ),
            ));
        }
        spans.push(place("ib", self.ib.va.0, u64::from(self.ib.size_dwords) * 4, None)?);
        spans.sort_by_key(|s| s.va);
        // The span reaching furthest so far: a long span may overlap one that is not its neighbour.
        let mut furthest: Option<&Span> = None;
        for s in &spans {
            if let Some(f) = furthest.filter(|f| s.va < f.end) {
                let at = s.region.map_or_else(|| "ib.va".to_owned(), |i| format!("regions[{i}].va"));
                return Err(invalid(
                    at,
                    format!(
                        "{} [{:#x}, {:#x}) overlaps {} [{:#x}, {:#x}): memory regions and the IB must not overlap",
                        self.label(s),
                        s.va,
                        s.end,
                        self.label(f),
                        f.va,
                        f.end
                    ),
                ));
            }
            if furthest.is_none_or(|f| s.end > f.end) {
                furthest = Some(s);
            }
        }
        let granule = |size: u64| size.div_ceil(SimMemory::GRANULE_BYTES).saturating_mul(SimMemory::GRANULE_BYTES);
        let ring = u64::from(self.aql.packets.next_power_of_two()) * 64;
        let total = spans.iter().fold(granule(ring), |sum, s| sum.saturating_add(granule(s.end - s.va)));
        if total > DEVICE_BYTES_MAX {
            return Err(invalid(
                "regions",
                format!(
                    "the regions, the IB and the AQL ring take {total} bytes (granule-rounded), over the soft device's \
                     memory budget of {DEVICE_BYTES_MAX} bytes"
                ),
            ));
        }
        Ok(spans)
    }

    fn validate_patch_sites(&self, spans: &[Span]) -> Result<(), BundleError> {
        let ib_va = self.ib.va.0;
        let ib_end = ib_va + u64::from(self.ib.size_dwords) * 4;
        for (i, site) in self.patch_sites.iter().enumerate() {
            if let Err(e) = site.rule.parse::<Rule>() {
                return Err(invalid(format!("patch_sites[{i}].rule"), e.to_string()));
            }
            let va = site.va.0;
            let at = format!("patch_sites[{i}].va");
            if !va.is_multiple_of(4) {
                return Err(invalid(at, format!("{va:#x} is not dword aligned: a patch site is one dword")));
            }
            let end = va.saturating_add(4);
            match site.kind {
                PatchKind::DispatchDim => {
                    if va < ib_va || end > ib_end {
                        return Err(invalid(
                            at,
                            format!(
                                "{va:#x} lies outside the IB [{ib_va:#x}, {ib_end:#x}): a dispatch_dim site is a \
                                 DISPATCH_DIRECT dimension dword of the IB"
                            ),
                        ));
                    }
                }
                PatchKind::KernargU32 => {
                    let rule = "a kernarg_u32 site's 4 bytes lie inside a kernargs region";
                    // Spans are sorted and disjoint: the one starting last at or below `va`.
                    let holder = spans[..spans.partition_point(|s| s.va <= va)].last().filter(|s| va < s.end);
                    let Some(span) = holder else {
                        return Err(invalid(at, format!("{va:#x} lies in no region: {rule}")));
                    };
                    let Some(r) = span.region else {
                        return Err(invalid(at, format!("{va:#x} lies in the IB: {rule}")));
                    };
                    let region = &self.regions[r];
                    if region.role != Role::Kernargs {
                        return Err(invalid(
                            at,
                            format!(
                                "{va:#x} lies in regions[{r}] ({}) of role {}: {rule}",
                                shown(&region.name),
                                region.role.name()
                            ),
                        ));
                    }
                    if end > span.end {
                        return Err(invalid(
                            at,
                            format!(
                                "{va:#x} + 4 runs past the end {:#x} of regions[{r}] ({}): {rule}",
                                span.end,
                                shown(&region.name)
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn validate_expected(&self) -> Result<(), BundleError> {
        for (i, e) in self.expected.iter().enumerate() {
            let Some(r) = self.regions.iter().find(|r| r.name == e.region) else {
                return Err(invalid(
                    format!("expected[{i}].region"),
                    format!("{} is not the name of a region", shown(&e.region)),
                ));
            };
            if r.role == Role::Signal {
                return Err(invalid(
                    format!("expected[{i}].region"),
                    format!("{} is a signal region: expected results are memory regions", shown(&e.region)),
                ));
            }
            if e.sha256.len() != 64 || !e.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid(
                    format!("expected[{i}].sha256"),
                    format!("{} is not 64 hex digits", shown(&e.sha256)),
                ));
            }
        }
        Ok(())
    }
}

/// The span `[va, va + size)` of `at` (`regions[i]` or `ib`) when the soft device can place it
/// there: inside `[VA_MIN, VA_END)`, `va` aligned to [`SimMemory::ALLOCATE_AT_ALIGN`].
fn place(at: &str, va: u64, size: u64, region: Option<usize>) -> Result<Span, BundleError> {
    let (min, max) = (SimMemory::VA_MIN, SimMemory::VA_END);
    let end = va.checked_add(size).filter(|&end| va >= min && end <= max).ok_or_else(|| {
        invalid(format!("{at}.va"), format!("[{va:#x}, +{size}) is outside the address space [{min:#x}, {max:#x})"))
    })?;
    if !va.is_multiple_of(SimMemory::ALLOCATE_AT_ALIGN) {
        return Err(invalid(
            format!("{at}.va"),
            format!("{va:#x} is not aligned to {} bytes", SimMemory::ALLOCATE_AT_ALIGN),
        ));
    }
    Ok(Span { va, end, region })
}
