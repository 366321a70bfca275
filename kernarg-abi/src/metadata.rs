//! Code-object v4/v5/v6 metadata: the MessagePack map of the `NT_AMDGPU_METADATA` note.
//!
//! Keys, types and value kinds: `reference/amd-reference.md` §7. Required keys missing are errors
//! naming the kernel (or argument) and the key; unknown keys are skipped; a key repeated in one map
//! is an error. Hostile input is bounded: every length is checked against the remaining input and
//! skipped values nest at most [`METADATA_DEPTH_MAX`] arrays/maps deep.

use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use crate::msgpack::{Cursor, RawError};

mod error;
pub use error::{FieldPath, MetadataError};

/// Deepest nesting of arrays and maps accepted anywhere in the document (the metadata itself
/// needs 5: root map, kernel array, kernel map, argument array, argument map).
pub const METADATA_DEPTH_MAX: usize = 16;

/// The one major version of `amdhsa.version` this reader knows. Code object v3 through v6 all
/// write major version 1 (LLVM `AMDGPUMetadata.h`: `[1, 0]` v3, `[1, 1]` v4, `[1, 2]` v5 and
/// v6); minor versions only add keys, which the parser skips when it does not know them, and
/// hand-written assembly often says `[1, 0]` whatever the code object version, so any minor
/// version is read. Another major version is refused ([`MetadataError::UnsupportedVersion`]).
pub const METADATA_VERSION_MAJOR: u32 = 1;

/// The parsed metadata note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// `amdhsa.version` `[major, minor]` (`[1, 1]` for v4, `[1, 2]` for v5 and v6; the major
    /// version is always [`METADATA_VERSION_MAJOR`]).
    pub version: [u32; 2],
    /// `amdhsa.target`, e.g. `amdgcn-amd-amdhsa--gfx1100`.
    pub target: String,
    /// `amdhsa.printf` format strings (empty when absent).
    pub printf: Vec<String>,
    /// `amdhsa.kernels`, in document order.
    pub kernels: Vec<KernelMetadata>,
}

/// One entry of `amdhsa.kernels`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMetadata {
    /// `.name`: the source name.
    pub name: String,
    /// `.symbol`: the kernel descriptor symbol, `<name>.kd`.
    pub symbol: String,
    /// `.kernarg_segment_size`: bytes of kernarg segment, hidden arguments included.
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align`: a power of two.
    pub kernarg_segment_align: u32,
    /// `.group_segment_fixed_size`: static LDS bytes.
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size`: static scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// `.wavefront_size`: 32 or 64.
    pub wavefront_size: u32,
    /// `.sgpr_count`.
    pub sgpr_count: u32,
    /// `.vgpr_count`.
    pub vgpr_count: u32,
    /// `.agpr_count` (emitted for targets with matrix instructions only).
    pub agpr_count: Option<u32>,
    /// `.max_flat_workgroup_size`.
    pub max_flat_workgroup_size: u32,
    /// `.sgpr_spill_count`.
    pub sgpr_spill_count: Option<u32>,
    /// `.vgpr_spill_count`.
    pub vgpr_spill_count: Option<u32>,
    /// `.uses_dynamic_stack` (v5); `false` when absent.
    pub uses_dynamic_stack: bool,
    /// `.workgroup_processor_mode` (v5). The reference types it bool; clang-19 writes the integer
    /// 1, so both are accepted.
    pub workgroup_processor_mode: Option<bool>,
    /// `.uniform_work_group_size` (v5; 1 = uniform, emitted only when 1).
    pub uniform_work_group_size: Option<u32>,
    /// `.reqd_workgroup_size`.
    pub reqd_workgroup_size: Option<[u32; 3]>,
    /// `.kind` (`normal`, `init`, `fini`; `normal` when absent).
    pub kind: Option<String>,
    /// `.language`.
    pub language: Option<String>,
    /// `.args`, in document order (empty when absent).
    pub args: Vec<ArgMetadata>,
}

/// One entry of a kernel's `.args`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgMetadata {
    /// `.name`.
    pub name: Option<String>,
    /// `.type_name`.
    pub type_name: Option<String>,
    /// `.offset`: byte offset in the kernarg segment.
    pub offset: u32,
    /// `.size`: bytes.
    pub size: u32,
    /// `.value_kind`.
    pub value_kind: ValueKind,
    /// `.address_space` (global buffers and dynamic shared pointers).
    pub address_space: Option<AddressSpace>,
    /// `.access`.
    pub access: Option<Access>,
    /// `.actual_access`.
    pub actual_access: Option<Access>,
    /// `.pointee_align` (dynamic shared pointers).
    pub pointee_align: Option<u32>,
    /// `.is_const`.
    pub is_const: bool,
    /// `.is_restrict`.
    pub is_restrict: bool,
    /// `.is_volatile`.
    pub is_volatile: bool,
    /// `.is_pipe`.
    pub is_pipe: bool,
}

/// Declares a string-valued enum with an `Unknown(String)` fallback, `as_str`, `KNOWN` and
/// parsing, from one table so the two directions cannot drift apart.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )* }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value not in the reference table, kept verbatim.
            Unknown(String),
        }

        impl $name {
            /// Every known value, in reference-table order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),*];

            /// The metadata string.
            #[must_use]
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $text, )*
                    $name::Unknown(s) => s,
                }
            }

            /// Parses a metadata string; strings not in the table become `Unknown`.
            #[must_use]
            pub fn parse(s: &str) -> Self {
                match s {
                    $( $text => $name::$variant, )*
                    other => $name::Unknown(other.to_string()),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum! {
    /// `.value_kind` of an argument (reference §7 ".value_kind strings").
    pub enum ValueKind {
        /// Argument copied directly into the kernarg segment.
        ByValue = "by_value",
        /// Global address-space pointer.
        GlobalBuffer = "global_buffer",
        /// Group (LDS) pointer to dynamically allocated LDS.
        DynamicSharedPointer = "dynamic_shared_pointer",
        /// Global pointer to an S#.
        Sampler = "sampler",
        /// Global pointer to a T#.
        Image = "image",
        /// Global pointer to an OpenCL pipe.
        Pipe = "pipe",
        /// Global pointer to a device-enqueue queue.
        Queue = "queue",
        /// OpenCL global offset X.
        HiddenGlobalOffsetX = "hidden_global_offset_x",
        /// OpenCL global offset Y.
        HiddenGlobalOffsetY = "hidden_global_offset_y",
        /// OpenCL global offset Z.
        HiddenGlobalOffsetZ = "hidden_global_offset_z",
        /// Space to leave, not set up.
        HiddenNone = "hidden_none",
        /// Pointer to the runtime printf buffer.
        HiddenPrintfBuffer = "hidden_printf_buffer",
        /// Pointer to the runtime hostcall buffer.
        HiddenHostcallBuffer = "hidden_hostcall_buffer",
        /// Pointer to the default device-enqueue queue.
        HiddenDefaultQueue = "hidden_default_queue",
        /// Pointer linking enqueued kernels.
        HiddenCompletionAction = "hidden_completion_action",
        /// Pointer for multi-grid synchronisation.
        HiddenMultigridSyncArg = "hidden_multigrid_sync_arg",
        /// Number of full work-groups in X (u32).
        HiddenBlockCountX = "hidden_block_count_x",
        /// Number of full work-groups in Y (u32).
        HiddenBlockCountY = "hidden_block_count_y",
        /// Number of full work-groups in Z (u32).
        HiddenBlockCountZ = "hidden_block_count_z",
        /// Work-group size X (u16).
        HiddenGroupSizeX = "hidden_group_size_x",
        /// Work-group size Y (u16).
        HiddenGroupSizeY = "hidden_group_size_y",
        /// Work-group size Z (u16).
        HiddenGroupSizeZ = "hidden_group_size_z",
        /// Size of the partial last work-group in X, 0 if none (u16).
        HiddenRemainderX = "hidden_remainder_x",
        /// Size of the partial last work-group in Y (u16).
        HiddenRemainderY = "hidden_remainder_y",
        /// Size of the partial last work-group in Z (u16).
        HiddenRemainderZ = "hidden_remainder_z",
        /// Grid dimensionality 1..=3 (u16).
        HiddenGridDims = "hidden_grid_dims",
        /// Pointer to the device malloc/free heap v1.
        HiddenHeapV1 = "hidden_heap_v1",
        /// Size of dynamically allocated LDS (u32).
        HiddenDynamicLdsSize = "hidden_dynamic_lds_size",
        /// High 32 bits of the private aperture base.
        HiddenPrivateBase = "hidden_private_base",
        /// High 32 bits of the shared aperture base.
        HiddenSharedBase = "hidden_shared_base",
        /// Pointer to `amd_queue_t`.
        HiddenQueuePtr = "hidden_queue_ptr",
    }
}

impl ValueKind {
    /// Whether the runtime, not the caller, fills this argument (`hidden_*`, including unknown
    /// kinds spelled that way).
    #[must_use]
    pub fn is_hidden(&self) -> bool {
        self.as_str().starts_with("hidden_")
    }
}

string_enum! {
    /// `.address_space` of a pointer argument (reference §7).
    pub enum AddressSpace {
        /// Private (scratch).
        Private = "private",
        /// Global.
        Global = "global",
        /// Constant.
        Constant = "constant",
        /// Local (LDS).
        Local = "local",
        /// Generic (flat).
        Generic = "generic",
        /// Region (GDS).
        Region = "region",
    }
}

string_enum! {
    /// `.access` / `.actual_access` of an argument (reference §7).
    pub enum Access {
        /// Read only.
        ReadOnly = "read_only",
        /// Write only.
        WriteOnly = "write_only",
        /// Read and write.
        ReadWrite = "read_write",
    }
}

/// Parses the MessagePack document of an `NT_AMDGPU_METADATA` note.
///
/// # Errors
/// [`MetadataError`] for malformed MessagePack, wrong types, out-of-range integers, duplicate
/// keys, missing required keys, an `amdhsa.version` of another major version than
/// [`METADATA_VERSION_MAJOR`], excessive nesting and trailing bytes.
pub fn parse_metadata(msgpack: &[u8]) -> core::result::Result<Metadata, MetadataError> {
    let mut p = Parser { c: Cursor::new(msgpack), depth: 0 };
    let metadata = p.root()?;
    if p.c.remaining() != 0 {
        return Err(MetadataError::TrailingBytes { offset: p.c.offset(), count: p.c.remaining() });
    }
    Ok(metadata)
}

/// Position in the document structure, for error paths.
#[derive(Clone, Copy)]
struct At<'k> {
    kernel: Option<usize>,
    arg: Option<usize>,
    key: &'k str,
}

impl<'k> At<'k> {
    const ROOT: At<'static> = At { kernel: None, arg: None, key: "" };

    fn key(self, key: &'k str) -> Self {
        Self { key, ..self }
    }

    fn path(self) -> FieldPath {
        let mut s = String::new();
        if let Some(k) = self.kernel {
            s = format!("amdhsa.kernels[{k}]");
            if let Some(a) = self.arg {
                s = format!("{s}.args[{a}]");
            }
            if !self.key.is_empty() {
                s.push_str(self.key);
            }
        } else {
            s.push_str(if self.key.is_empty() { "metadata root" } else { self.key });
        }
        FieldPath(s)
    }
}

struct Parser<'a> {
    c: Cursor<'a>,
    /// Arrays and maps currently open.
    depth: usize,
}

type Result<T> = core::result::Result<T, MetadataError>;

impl<'a> Parser<'a> {
    fn error(at: At<'_>, offset: usize, expected: &'static str, e: RawError) -> MetadataError {
        let path = at.path();
        match e {
            RawError::Truncated => MetadataError::Truncated { path, offset },
            RawError::WrongType { found } => MetadataError::WrongType { path, offset, expected, found },
            // Every unsigned field of the metadata is read as u32.
            RawError::OutOfRange { value } => {
                MetadataError::OutOfRange { path, offset, value, max: u64::from(u32::MAX) }
            }
            RawError::TooLong { length, remaining } => {
                MetadataError::LengthExceedsInput { path, offset, length, remaining }
            }
            RawError::TooDeep => MetadataError::TooDeep { path, offset, limit: METADATA_DEPTH_MAX },
            RawError::Utf8 => MetadataError::InvalidUtf8 { path, offset },
            RawError::Reserved => MetadataError::ReservedMarker { path, offset },
        }
    }

    fn read<T>(
        &mut self,
        at: At<'_>,
        expected: &'static str,
        f: impl FnOnce(&mut Cursor<'a>) -> core::result::Result<T, RawError>,
    ) -> Result<T> {
        let offset = self.c.offset();
        f(&mut self.c).map_err(|e| Self::error(at, offset, expected, e))
    }

    fn u32(&mut self, at: At<'_>) -> Result<u32> {
        self.read(at, "u32", Cursor::read_uint::<u32>)
    }

    fn string(&mut self, at: At<'_>) -> Result<String> {
        self.read(at, "string", |c| c.read_str().map(ToString::to_string))
    }

    /// A flag: bool, or the integers 0 and 1 (clang-19 writes `.workgroup_processor_mode: 1`).
    fn flag(&mut self, at: At<'_>) -> Result<bool> {
        let offset = self.c.offset();
        match self.c.peek() {
            Ok(rmp::Marker::True | rmp::Marker::False) => self.read(at, "bool", Cursor::read_bool),
            Ok(_) => match self.read(at, "bool or 0/1", Cursor::read_int)? {
                0 => Ok(false),
                1 => Ok(true),
                value => Err(MetadataError::OutOfRange { path: at.path(), offset, value, max: 1 }),
            },
            Err(e) => Err(Self::error(at, offset, "bool", e)),
        }
    }

    /// Enters an array or map: checks the depth limit.
    fn enter(&mut self, at: At<'_>) -> Result<()> {
        if self.depth >= METADATA_DEPTH_MAX {
            return Err(MetadataError::TooDeep { path: at.path(), offset: self.c.offset(), limit: METADATA_DEPTH_MAX });
        }
        self.depth += 1;
        Ok(())
    }

    fn skip(&mut self, at: At<'_>) -> Result<()> {
        let budget = METADATA_DEPTH_MAX - self.depth;
        self.read(at, "value", |c| c.skip(budget))
    }

    /// Reads an array header and calls `f` for each element index.
    fn array(&mut self, at: At<'_>, mut f: impl FnMut(&mut Self, usize) -> Result<()>) -> Result<u32> {
        self.enter(at)?;
        let len = self.read(at, "array", Cursor::read_array_len)?;
        // Bounded: `len` is at most the remaining byte count, and every element consumes a byte.
        for i in 0..len {
            // CAST: u32 to usize is lossless on every target this crate supports (≥ 32-bit).
            f(self, i as usize)?;
        }
        self.depth -= 1;
        Ok(len)
    }

    /// A fixed-length array of u32.
    fn u32_array<const N: usize>(&mut self, at: At<'_>) -> Result<[u32; N]> {
        let offset = self.c.offset();
        let mut out = [0u32; N];
        let mut values = Vec::new();
        let len = self.array(at, |p, _| {
            values.push(p.u32(at)?);
            Ok(())
        })?;
        if values.len() != N {
            // CAST: N is 2 or 3.
            #[allow(clippy::cast_possible_truncation)]
            return Err(MetadataError::WrongLength { path: at.path(), offset, expected: N as u32, found: len });
        }
        out.copy_from_slice(&values);
        Ok(out)
    }

    /// Walks a map with string keys, rejecting duplicates. `f` returns `false` for keys it does
    /// not know; their values are skipped.
    fn map(&mut self, at: At<'_>, mut f: impl FnMut(&mut Self, &'a str) -> Result<bool>) -> Result<()> {
        self.enter(at)?;
        let len = self.read(at, "map", Cursor::read_map_len)?;
        let mut seen = BTreeSet::new();
        // Bounded: `len` is at most half the remaining byte count, and every entry consumes two.
        for _ in 0..len {
            let offset = self.c.offset();
            let key = self.read(at, "string key", Cursor::read_str)?;
            if !seen.insert(key) {
                return Err(MetadataError::DuplicateKey { path: at.path(), offset, key: key.to_string() });
            }
            if !f(self, key)? {
                self.skip(at.key(key))?;
            }
        }
        self.depth -= 1;
        Ok(())
    }

    fn root(&mut self) -> Result<Metadata> {
        let (mut version, mut target, mut printf, mut kernels) = (None, None, Vec::new(), None);
        self.map(At::ROOT, |p, key| {
            let at = At::ROOT.key(key);
            match key {
                "amdhsa.version" => {
                    let offset = p.c.offset();
                    let found = p.u32_array::<2>(at)?;
                    if found[0] != METADATA_VERSION_MAJOR {
                        return Err(MetadataError::UnsupportedVersion {
                            path: at.path(),
                            offset,
                            found,
                            supported_major: METADATA_VERSION_MAJOR,
                        });
                    }
                    version = Some(found);
                }
                "amdhsa.target" => target = Some(p.string(at)?),
                "amdhsa.printf" => {
                    p.array(at, |p, _| {
                        printf.push(p.string(at)?);
                        Ok(())
                    })?;
                }
                "amdhsa.kernels" => {
                    let mut list = Vec::new();
                    p.array(at, |p, i| {
                        list.push(p.kernel(i)?);
                        Ok(())
                    })?;
                    kernels = Some(list);
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(Metadata {
            version: version.ok_or(MetadataError::MissingRootKey { key: "amdhsa.version" })?,
            target: target.ok_or(MetadataError::MissingRootKey { key: "amdhsa.target" })?,
            printf,
            kernels: kernels.ok_or(MetadataError::MissingRootKey { key: "amdhsa.kernels" })?,
        })
    }

    fn kernel(&mut self, index: usize) -> Result<KernelMetadata> {
        let base = At { kernel: Some(index), arg: None, key: "" };
        let mut k = KernelFields::default();
        self.map(base, |p, key| {
            let at = base.key(key);
            match key {
                ".name" => k.name = Some(p.string(at)?),
                ".symbol" => k.symbol = Some(p.string(at)?),
                ".kernarg_segment_size" => k.kernarg_segment_size = Some(p.u32(at)?),
                ".kernarg_segment_align" => k.kernarg_segment_align = Some(p.u32(at)?),
                ".group_segment_fixed_size" => k.group_segment_fixed_size = Some(p.u32(at)?),
                ".private_segment_fixed_size" => k.private_segment_fixed_size = Some(p.u32(at)?),
                ".wavefront_size" => k.wavefront_size = Some(p.u32(at)?),
                ".sgpr_count" => k.sgpr_count = Some(p.u32(at)?),
                ".vgpr_count" => k.vgpr_count = Some(p.u32(at)?),
                ".agpr_count" => k.agpr_count = Some(p.u32(at)?),
                ".max_flat_workgroup_size" => k.max_flat_workgroup_size = Some(p.u32(at)?),
                ".sgpr_spill_count" => k.sgpr_spill_count = Some(p.u32(at)?),
                ".vgpr_spill_count" => k.vgpr_spill_count = Some(p.u32(at)?),
                ".uses_dynamic_stack" => k.uses_dynamic_stack = Some(p.flag(at)?),
                ".workgroup_processor_mode" => k.workgroup_processor_mode = Some(p.flag(at)?),
                ".uniform_work_group_size" => k.uniform_work_group_size = Some(p.u32(at)?),
                ".reqd_workgroup_size" => k.reqd_workgroup_size = Some(p.u32_array::<3>(at)?),
                ".kind" => k.kind = Some(p.string(at)?),
                ".language" => k.language = Some(p.string(at)?),
                ".args" => {
                    p.array(at, |p, i| {
                        k.args.push(p.arg(index, i)?);
                        Ok(())
                    })?;
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        k.finish(index)
    }

    fn arg(&mut self, kernel: usize, index: usize) -> Result<ArgFields> {
        let base = At { kernel: Some(kernel), arg: Some(index), key: "" };
        let mut a = ArgFields::default();
        self.map(base, |p, key| {
            let at = base.key(key);
            match key {
                ".name" => a.name = Some(p.string(at)?),
                ".type_name" => a.type_name = Some(p.string(at)?),
                ".offset" => a.offset = Some(p.u32(at)?),
                ".size" => a.size = Some(p.u32(at)?),
                ".value_kind" => a.value_kind = Some(ValueKind::parse(&p.string(at)?)),
                ".address_space" => a.address_space = Some(AddressSpace::parse(&p.string(at)?)),
                ".access" => a.access = Some(Access::parse(&p.string(at)?)),
                ".actual_access" => a.actual_access = Some(Access::parse(&p.string(at)?)),
                ".pointee_align" => a.pointee_align = Some(p.u32(at)?),
                ".is_const" => a.is_const = p.flag(at)?,
                ".is_restrict" => a.is_restrict = p.flag(at)?,
                ".is_volatile" => a.is_volatile = p.flag(at)?,
                ".is_pipe" => a.is_pipe = p.flag(at)?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(a)
    }
}

/// Kernel keys as read, before the required ones are checked.
#[derive(Default)]
struct KernelFields {
    name: Option<String>,
    symbol: Option<String>,
    kernarg_segment_size: Option<u32>,
    kernarg_segment_align: Option<u32>,
    group_segment_fixed_size: Option<u32>,
    private_segment_fixed_size: Option<u32>,
    wavefront_size: Option<u32>,
    sgpr_count: Option<u32>,
    vgpr_count: Option<u32>,
    agpr_count: Option<u32>,
    max_flat_workgroup_size: Option<u32>,
    sgpr_spill_count: Option<u32>,
    vgpr_spill_count: Option<u32>,
    uses_dynamic_stack: Option<bool>,
    workgroup_processor_mode: Option<bool>,
    uniform_work_group_size: Option<u32>,
    reqd_workgroup_size: Option<[u32; 3]>,
    kind: Option<String>,
    language: Option<String>,
    args: Vec<ArgFields>,
}

impl KernelFields {
    fn finish(self, index: usize) -> Result<KernelMetadata> {
        let label = self.name.clone().unwrap_or_else(|| format!("amdhsa.kernels[{index}]"));
        let missing = |key: &'static str| MetadataError::MissingKernelKey { kernel: label.clone(), key };
        let args = self.args.into_iter().enumerate().map(|(i, a)| a.finish(&label, i)).collect::<Result<Vec<_>>>()?;
        Ok(KernelMetadata {
            name: self.name.ok_or_else(|| missing(".name"))?,
            symbol: self.symbol.ok_or_else(|| missing(".symbol"))?,
            kernarg_segment_size: self.kernarg_segment_size.ok_or_else(|| missing(".kernarg_segment_size"))?,
            kernarg_segment_align: self.kernarg_segment_align.ok_or_else(|| missing(".kernarg_segment_align"))?,
            group_segment_fixed_size: self
                .group_segment_fixed_size
                .ok_or_else(|| missing(".group_segment_fixed_size"))?,
            private_segment_fixed_size: self
                .private_segment_fixed_size
                .ok_or_else(|| missing(".private_segment_fixed_size"))?,
            wavefront_size: self.wavefront_size.ok_or_else(|| missing(".wavefront_size"))?,
            sgpr_count: self.sgpr_count.ok_or_else(|| missing(".sgpr_count"))?,
            vgpr_count: self.vgpr_count.ok_or_else(|| missing(".vgpr_count"))?,
            agpr_count: self.agpr_count,
            max_flat_workgroup_size: self.max_flat_workgroup_size.ok_or_else(|| missing(".max_flat_workgroup_size"))?,
            sgpr_spill_count: self.sgpr_spill_count,
            vgpr_spill_count: self.vgpr_spill_count,
            uses_dynamic_stack: self.uses_dynamic_stack.unwrap_or(false),
            workgroup_processor_mode: self.workgroup_processor_mode,
            uniform_work_group_size: self.uniform_work_group_size,
            reqd_workgroup_size: self.reqd_workgroup_size,
            kind: self.kind,
            language: self.language,
            args,
        })
    }
}

/// Argument keys as read, before the required ones are checked.
#[derive(Default)]
struct ArgFields {
    name: Option<String>,
    type_name: Option<String>,
    offset: Option<u32>,
    size: Option<u32>,
    value_kind: Option<ValueKind>,
    address_space: Option<AddressSpace>,
    access: Option<Access>,
    actual_access: Option<Access>,
    pointee_align: Option<u32>,
    is_const: bool,
    is_restrict: bool,
    is_volatile: bool,
    is_pipe: bool,
}

impl ArgFields {
    fn finish(self, kernel: &str, index: usize) -> Result<ArgMetadata> {
        let missing = |key: &'static str| MetadataError::MissingArgKey { kernel: kernel.to_string(), index, key };
        Ok(ArgMetadata {
            name: self.name,
            type_name: self.type_name,
            offset: self.offset.ok_or_else(|| missing(".offset"))?,
            size: self.size.ok_or_else(|| missing(".size"))?,
            value_kind: self.value_kind.ok_or_else(|| missing(".value_kind"))?,
            address_space: self.address_space,
            access: self.access,
            actual_access: self.actual_access,
            pointee_align: self.pointee_align,
            is_const: self.is_const,
            is_restrict: self.is_restrict,
            is_volatile: self.is_volatile,
            is_pipe: self.is_pipe,
        })
    }
}

#[cfg(test)]
mod tests;
