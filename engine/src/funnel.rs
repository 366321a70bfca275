//! The typed launch funnel: every ordinary launch of a workload goes through [`Funnel::launch`],
//! which builds the exact kernarg blob from the kernel's layout, launches it on the device and,
//! while a capture is open, records it into the [`Recorder`] (`docs/ARCHITECTURE.md`, "Data flow of one token").
//!
//! A recorded launch carries the blob's own bytes (never a pointer to caller memory), the
//! artifact identity, the geometry and LDS, every pointer argument resolved to the allocation it
//! points into, and the effects the caller declared with [`Use`]s. A launch declared with no uses
//! is recorded with [`Effects::Unknown`], which the dependency derivation serialises against
//! everything (fail closed).
//!
//! Every argument that follows the decode position is declared at its launch
//! ([`Launch::declaring`], a name and a rule per argument): the recorder checks each declaration
//! against the value passed and the tape carries it as a binding; calibration confirms it and
//! refuses any word that moves undeclared. A rule such as `max(0, position + 1 - window)` is
//! constant through early positions, so only its declaration keeps it bound.
//!
//! The funnel counts what it issued ([`Funnel::launches`], [`Funnel::externals`]): the route
//! proof uses the counts to show that a retained token issued no ordinary launch.

use kernarg_abi::KernargLayout;
use kernarg_abi::layout::{ArgValue, DispatchGeometry};
use kernarg_abi::metadata::ValueKind;
use kernels::effects::EffectsDecl;
pub use tape_core::binding::Rule;
use tape_core::coverage::{self, Uncovered};
use tape_core::record::AllocationId;
pub use tape_core::recorder::DeclaredArg;
use tape_core::recorder::{RecordError, Recorder};
use tape_core::tape::Tape;
use tape_core::{Access, ArtifactId, Effect, Effects, Geometry, LaunchRecord, Lds, PointerArg};

use hal::{Device, LaunchError, LaunchRequest, LoadError, LoadedCodeObject};

/// A kernel ready to launch: its descriptor on the device, its identity and its kernarg layout.
#[derive(Clone, Debug)]
pub struct Kernel {
    artifact: ArtifactId,
    kd_va: u64,
    layout: KernargLayout,
    static_lds: u32,
    wave_size: u8,
    /// The kernel's own declared effects, when the kernel catalogue knows its code object
    /// (`kernels::catalog`): a capture refuses a launch whose [`Use`]s do not cover them.
    effects: Option<&'static EffectsDecl>,
}

/// Why a [`Kernel`] cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The code object could not be loaded on the device.
    #[error("loading the code object: {0}")]
    Load(#[from] LoadError),
    /// The code object could not be read.
    #[error("reading the code object: {0}")]
    Read(#[from] kernarg_abi::ReadError),
    /// The code object has no kernel of this name.
    #[error("the code object has no kernel {name:?}")]
    NoSuchKernel {
        /// The name asked for.
        name: String,
    },
    /// The kernel's kernarg layout is not usable.
    #[error("kernel {name:?}: {source}")]
    Layout {
        /// The kernel.
        name: String,
        /// Why.
        source: kernarg_abi::layout::LayoutError,
    },
    /// A wavefront size other than 32 or 64.
    #[error("kernel {name:?}: wavefront size {wavefront_size} is neither 32 nor 64")]
    WaveSize {
        /// The kernel.
        name: String,
        /// `.wavefront_size`.
        wavefront_size: u32,
    },
}

impl Kernel {
    /// The kernel `name` of a code object already loaded on a device as `loaded`, from the
    /// same `bytes`.
    ///
    /// # Errors
    /// [`KernelError`] when the bytes do not parse or have no such kernel.
    pub fn from_loaded(loaded: &LoadedCodeObject, bytes: &[u8], name: &str) -> Result<Self, KernelError> {
        let no_such = || KernelError::NoSuchKernel { name: name.to_owned() };
        let on_device = loaded.kernel(name).ok_or_else(no_such)?;
        let parsed = kernarg_abi::read(bytes)?;
        let layout = parsed
            .kernel(name)
            .ok_or_else(no_such)?
            .kernarg_layout()
            .map_err(|source| KernelError::Layout { name: name.to_owned(), source })?;
        let wave_size = u8::try_from(on_device.wavefront_size)
            .ok()
            .filter(|w| matches!(w, 32 | 64))
            .ok_or(KernelError::WaveSize { name: name.to_owned(), wavefront_size: on_device.wavefront_size })?;
        Ok(Self {
            artifact: ArtifactId { code_object_sha256: loaded.sha256, symbol: name.to_owned() },
            kd_va: on_device.kd_va,
            layout,
            static_lds: on_device.group_segment_fixed_size,
            wave_size,
            effects: catalogued_effects(&loaded.sha256, name),
        })
    }

    /// Loads `bytes` on `device` and returns its kernels `names`, in order.
    ///
    /// # Errors
    /// [`KernelError`].
    pub fn load_all<D: Device + ?Sized>(
        device: &mut D,
        bytes: &[u8],
        names: &[&str],
    ) -> Result<Vec<Self>, KernelError> {
        let loaded = device.load_code_object(bytes)?;
        names.iter().map(|name| Self::from_loaded(&loaded, bytes, name)).collect()
    }

    /// Which code runs.
    #[must_use]
    pub fn artifact(&self) -> &ArtifactId {
        &self.artifact
    }

    /// The kernel descriptor's VA.
    #[must_use]
    pub fn kd_va(&self) -> u64 {
        self.kd_va
    }

    /// The kernarg layout.
    #[must_use]
    pub fn layout(&self) -> &KernargLayout {
        &self.layout
    }

    /// The kernel's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.artifact.symbol
    }
}

/// The declared effects of kernel `name` of the checked-in code object whose SHA-256 is
/// `sha256`, when the catalogue holds it.
fn catalogued_effects(sha256: &[u8; 32], name: &str) -> Option<&'static EffectsDecl> {
    let artifact =
        kernels::artifacts().iter().find(|a| kernels::parse_sha256_hex(a.sha256).as_ref() == Some(sha256))?;
    Some(kernels::catalog::module_of(artifact.path)?.kernel(name)?.effects)
}

/// One declared effect of a launch: `bytes` bytes from `va` are read and/or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Use {
    /// First byte.
    pub va: u64,
    /// Bytes; declare the largest extent any position of the step touches, so that a recorded
    /// effect does not move with the position (tape-core's calibration rejects moving effects).
    pub bytes: u64,
    /// How.
    pub access: Access,
}

impl Use {
    /// Reads of `bytes` bytes from `va`.
    #[must_use]
    pub const fn read(va: u64, bytes: u64) -> Self {
        Self { va, bytes, access: Access::Read }
    }

    /// Writes of `bytes` bytes from `va`.
    #[must_use]
    pub const fn write(va: u64, bytes: u64) -> Self {
        Self { va, bytes, access: Access::Write }
    }

    /// Reads and writes of `bytes` bytes from `va`.
    #[must_use]
    pub const fn read_write(va: u64, bytes: u64) -> Self {
        Self { va, bytes, access: Access::ReadWrite }
    }
}

/// One launch through the funnel.
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    /// What runs.
    pub kernel: &'a Kernel,
    /// Its explicit arguments, in order.
    pub args: &'a [ArgValue],
    /// Grid in work-items per axis.
    pub grid: [u32; 3],
    /// Work-group in work-items per axis.
    pub workgroup: [u16; 3],
    /// Dynamic LDS bytes.
    pub dynamic_lds: u32,
    /// Declared effects; empty = unknown (serialised against everything).
    pub uses: &'a [Use],
    /// The explicit arguments that follow the decode position, each with its name and rule
    /// ([`DeclaredArg`]); every other argument is the same at every position. Recorded as the
    /// tape's bindings, which calibration confirms (`tape_core::calibrate::calibrate_declared`).
    pub declared: &'a [DeclaredArg<'a>],
}

impl<'a> Launch<'a> {
    /// A 1-D launch of `grid` work-items in groups of `workgroup`, without dynamic LDS.
    #[must_use]
    pub fn linear(kernel: &'a Kernel, args: &'a [ArgValue], grid: u32, workgroup: u16, uses: &'a [Use]) -> Self {
        Self { kernel, args, grid: [grid, 1, 1], workgroup: [workgroup, 1, 1], dynamic_lds: 0, uses, declared: &[] }
    }

    /// The same launch with `declared` as its position-dependent arguments.
    #[must_use]
    pub fn declaring(self, declared: &'a [DeclaredArg<'a>]) -> Self {
        Self { declared, ..self }
    }

    fn geometry(&self) -> DispatchGeometry {
        let dims = aql_packets::Dimensions::fewest(self.grid, self.workgroup).count();
        DispatchGeometry {
            grid_size: self.grid,
            workgroup_size: self.workgroup,
            dims,
            dynamic_lds_bytes: self.dynamic_lds,
        }
    }
}

/// Why a funnel launch failed. The launch did not run unless the error says the device ran it.
#[derive(Debug, thiserror::Error)]
pub enum FunnelError {
    /// The arguments do not fit the kernel's layout.
    #[error("{kernel}: building the kernarg blob: {source}")]
    Blob {
        /// The kernel.
        kernel: String,
        /// Why.
        source: kernarg_abi::layout::BlobError,
    },
    /// The device refused or failed the launch.
    #[error("{kernel}: {source}")]
    Launch {
        /// The kernel.
        kernel: String,
        /// Why.
        source: LaunchError,
    },
}

/// A recording that is not what ran, armed to test that the census (gate 2,
/// [`crate::replay::census`]) catches it: the launches run as the workload issued them, and
/// each capture's tape is then told otherwise. Nothing but tests arms one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordingFault {
    /// The launch at this index of each capture appears twice in its tape (it ran once).
    RecordedTwice {
        /// The launch's index in the capture.
        launch: usize,
    },
    /// The launches at this index and the next appear swapped in the tape (they ran in order).
    Swapped {
        /// The first launch's index in the capture.
        launch: usize,
    },
}

/// The launch funnel of one workload on one device: see the module documentation.
#[derive(Debug)]
pub struct Funnel {
    recorder: Recorder,
    launches: u64,
    externals: u64,
    recording_fault: Option<RecordingFault>,
}

impl Funnel {
    /// A funnel whose captures hold at most `capacity_launches` launches.
    #[must_use]
    pub fn new(capacity_launches: usize) -> Self {
        Self { recorder: Recorder::new(capacity_launches), launches: 0, externals: 0, recording_fault: None }
    }

    /// Arms `fault` for every later capture (testing the census; see [`RecordingFault`]).
    pub fn inject_recording_fault(&mut self, fault: RecordingFault) {
        self.recording_fault = Some(fault);
    }

    /// Ordinary launches issued so far.
    #[must_use]
    pub fn launches(&self) -> u64 {
        self.launches
    }

    /// External (off-tape) steps counted so far.
    #[must_use]
    pub fn externals(&self) -> u64 {
        self.externals
    }

    /// Whether a capture is open (possibly poisoned).
    #[must_use]
    pub fn is_capturing(&self) -> bool {
        self.recorder.is_open() || self.recorder.poisoned_by().is_some()
    }

    /// The recorder's capacity.
    #[must_use]
    pub fn capacity_launches(&self) -> usize {
        self.recorder.capacity_launches()
    }

    /// Opens a capture of the step at `position`.
    ///
    /// # Errors
    /// The recorder's: a capture is already open or the recorder is poisoned.
    pub fn begin_capture(&mut self, position: u32) -> Result<(), RecordError> {
        self.recorder.begin(position)
    }

    /// Closes the capture and returns its tape; the recorder is ready for the next capture
    /// whether or not this one succeeded.
    ///
    /// # Errors
    /// The first recording error of the capture (capacity, a launch that is not a valid tape
    /// entry, ...), or [`RecordError::NotOpen`].
    pub fn finish_capture(&mut self) -> Result<Tape, RecordError> {
        let result = self.recorder.finish();
        self.recorder.reset();
        match (result, self.recording_fault) {
            (Ok(tape), Some(fault)) => Ok(misrecord(tape, fault)),
            (result, _) => result,
        }
    }

    /// Drops an open capture.
    pub fn abort_capture(&mut self) {
        self.recorder.reset();
    }

    /// Counts one step kept outside the tape (the token embedding, a host copy), recorded by
    /// name while a capture is open.
    pub fn external(&mut self, name: &str) {
        self.externals += 1;
        if self.recorder.is_open() {
            // A failure poisons the capture; `finish_capture` reports it.
            let _ = self.recorder.record_external(name);
        }
    }

    /// Builds the blob, launches it, and records it while a capture is open. A recording
    /// failure does not fail the launch: it poisons the capture, and [`Funnel::finish_capture`]
    /// reports it.
    ///
    /// # Errors
    /// [`FunnelError`]: the launch did not complete.
    pub fn launch<D: Device + ?Sized>(&mut self, device: &mut D, launch: &Launch<'_>) -> Result<(), FunnelError> {
        let kernel = launch.kernel;
        let geometry = launch.geometry();
        let blob = kernel
            .layout
            .build(launch.args, &geometry)
            .map_err(|source| FunnelError::Blob { kernel: kernel.name().to_owned(), source })?;
        let request = LaunchRequest {
            kernel_object: kernel.kd_va,
            grid_work_items: launch.grid,
            workgroup_work_items: launch.workgroup,
            dynamic_lds_bytes: launch.dynamic_lds,
            kernarg: &blob,
        };
        device.launch(&request).map_err(|source| FunnelError::Launch { kernel: kernel.name().to_owned(), source })?;
        self.launches += 1;
        if self.recorder.is_open() {
            let record = Self::record(device, launch, blob);
            // A failure poisons the capture; `finish_capture` reports it.
            let _ = match Self::uncovered(device, launch, &record) {
                Some((argument, uncovered)) => self.recorder.refuse_uncovered(kernel.name(), argument, uncovered),
                None => self.recorder.record_declared(record, &kernel.layout, launch.declared),
            };
        }
        Ok(())
    }

    /// The first range the kernel's own declaration (`kernels::effects`, resolved for this
    /// launch's kernarg blob and geometry) gives that the launch's [`Use`]s do not grant, with
    /// the argument's name. `None` when every range is granted, when the catalogue does not know
    /// the kernel, and when its declaration does not resolve for these arguments (the device
    /// refuses such a launch itself).
    fn uncovered<D: Device + ?Sized>(
        device: &D,
        launch: &Launch<'_>,
        record: &LaunchRecord,
    ) -> Option<(&'static str, Uncovered)> {
        let decl = launch.kernel.effects?;
        let view = kernels::launch::Launch {
            kernarg: &record.kernarg,
            grid_size: launch.grid,
            workgroup_size: launch.workgroup,
            dynamic_lds_bytes: launch.dynamic_lds,
        };
        let resolved = kernels::resolve::resolve(decl, &view).ok()?;
        let kernel: Vec<Effect> = resolved
            .iter()
            .filter(|r| r.bytes > 0)
            .map(|r| {
                // An address outside every allocation is granted by no declared use either.
                let (allocation, offset_bytes) = device.resolve(r.address).unwrap_or((AllocationId(u32::MAX), 0));
                Effect { allocation, offset_bytes, len_bytes: r.bytes, access: r.access }
            })
            .collect();
        let found = coverage::uncovered(&record.effects, &kernel)?;
        let argument = resolved.iter().filter(|r| r.bytes > 0).nth(found.index).map(|r| r.arg_index);
        let name = argument.and_then(|i| decl.effects.iter().find(|e| e.arg_index == i)).map_or("?", |e| e.arg_name);
        Some((name, found))
    }

    fn record<D: Device + ?Sized>(device: &D, launch: &Launch<'_>, kernarg: Vec<u8>) -> LaunchRecord {
        let kernel = launch.kernel;
        let mut pointers = Vec::new();
        for (arg, value) in kernel.layout.explicit_args().zip(launch.args) {
            if let (ValueKind::GlobalBuffer, ArgValue::Pointer(va)) = (&arg.kind, value) {
                // An unresolvable pointer is left out: the recorder refuses the launch
                // (`PointerMissing`) and the capture is poisoned.
                if let Some((allocation, offset_bytes)) = device.resolve(*va) {
                    pointers.push(PointerArg { kernarg_offset: arg.offset, allocation, offset_bytes });
                }
            }
        }
        pointers.sort_by_key(|p| p.kernarg_offset);
        let mut effects = Vec::with_capacity(launch.uses.len());
        for u in launch.uses {
            match device.resolve(u.va) {
                Some((allocation, offset_bytes)) => {
                    effects.push(Effect { allocation, offset_bytes, len_bytes: u.bytes, access: u.access });
                }
                None => {
                    effects.clear();
                    break;
                }
            }
        }
        let effects = if effects.is_empty() { Effects::Unknown } else { Effects::Known(effects) };
        LaunchRecord {
            artifact: kernel.artifact.clone(),
            kernarg,
            geometry: Geometry { grid_work_items: launch.grid, workgroup_work_items: launch.workgroup },
            lds: Lds { static_bytes: kernel.static_lds, dynamic_bytes: launch.dynamic_lds },
            wave_size: kernel.wave_size,
            pointers,
            effects,
        }
    }
}

/// `tape` as `fault` tells it (unchanged when its launches do not reach the fault's index).
fn misrecord(tape: Tape, fault: RecordingFault) -> Tape {
    let original = tape.clone();
    let mut data = tape.into_data();
    let count = data.launches.len();
    match fault {
        RecordingFault::RecordedTwice { launch } if launch < count => {
            let copy = data.launches[launch].clone();
            data.launches.insert(launch + 1, copy);
            for binding in &mut data.bindings {
                if usize::try_from(binding.launch).is_ok_and(|i| i > launch) {
                    binding.launch = binding.launch.saturating_add(1);
                }
            }
        }
        RecordingFault::Swapped { launch } if launch + 1 < count => {
            data.launches.swap(launch, launch + 1);
            for binding in &mut data.bindings {
                let index = usize::try_from(binding.launch).unwrap_or(usize::MAX);
                if index == launch {
                    binding.launch = binding.launch.saturating_add(1);
                } else if index == launch + 1 {
                    binding.launch = binding.launch.saturating_sub(1);
                }
            }
        }
        _ => return original,
    }
    tape_core::serial::validate(data).unwrap_or(original)
}
