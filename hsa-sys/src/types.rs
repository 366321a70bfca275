//! Handles and structs of `hsa.h`, `hsa_ext_amd.h` and `amd_hsa_queue.h` (ROCm 5.2.3), with
//! compile-time layout asserts.
//!
//! Handles are the headers' one-field structs (`typedef struct { uint64_t handle; }`), passed by
//! value; the value 0 is reserved where the header says so but is not excluded by the type, since
//! the runtime writes handles through out-pointers.

use core::ffi::c_void;

use dynload::struct_layout;

/// Declares one opaque-handle struct per entry.
macro_rules! handles {
    ($($(#[doc = $doc:literal])* $name:ident = $c_type:literal;)*) => {
        $(
            $(#[doc = $doc])*
            #[doc = ""]
            #[doc = concat!("C type: `", $c_type, "`.")]
            #[repr(C)]
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct $name {
                /// Opaque handle.
                pub handle: u64,
            }
        )*

        fn handle_layout_entries(out: &mut Vec<crate::layout::LayoutEntry>) {
            $(struct_layout!(out; $name = $c_type, size 8, align 8 { handle: "handle" = 0, });)*
        }
    };
}

handles! {
    /// An agent: a CPU or GPU that takes part in the HSA system.
    Agent = "hsa_agent_t";
    /// A signal: a 64-bit value in shared memory that agents wait on and update.
    Signal = "hsa_signal_t";
    /// A memory region (the pre-pool allocation interface).
    Region = "hsa_region_t";
    /// An instruction set architecture.
    Isa = "hsa_isa_t";
    /// An executable: code objects loaded for agents.
    Executable = "hsa_executable_t";
    /// A symbol (kernel, variable, indirect function) of an executable.
    ExecutableSymbol = "hsa_executable_symbol_t";
    /// A reader of a code object held in memory or a file.
    CodeObjectReader = "hsa_code_object_reader_t";
    /// A code object loaded into an executable.
    LoadedCodeObject = "hsa_loaded_code_object_t";
    /// A memory pool of an agent.
    AmdMemoryPool = "hsa_amd_memory_pool_t";
}

/// `hsa_signal_value_t`: 64 bits in the large machine model, which is every 64-bit target
/// (`HSA_LARGE_MODEL` is defined under `__LP64__`).
pub type SignalValue = i64;

/// `hsa_queue_t`: the user-mode queue the runtime allocates; read-only for the application except
/// through the runtime's index functions and the ring at `base_address`.
#[repr(C)]
#[derive(Debug)]
pub struct Queue {
    /// `type`: a [`QueueType`](crate::QueueType) value (`hsa_queue_type32_t`).
    pub queue_type: u32,
    /// Bit mask of [`QueueFeature`](crate::QueueFeature) values; unknown bits are to be ignored.
    pub features: u32,
    /// The ring of AQL packets; aligned to the 64-byte packet size.
    pub base_address: *mut c_void,
    /// The doorbell the producer rings with the id of a packet ready to be processed.
    pub doorbell_signal: Signal,
    /// Number of packets the ring holds; a power of 2.
    pub size: u32,
    /// Reserved, 0.
    pub reserved1: u32,
    /// Queue identifier, unique over the life of the process.
    pub id: u64,
}

/// `amd_queue_t` (`amd_hsa_queue.h`): the AMD queue descriptor that embeds [`Queue`] and is shared
/// with the packet processor. The runtime's `hsa_queue_t*` points at the `hsa_queue` field of one
/// of these. Fields the header marks `volatile` are written by the packet processor or other
/// producers and must be read with volatile or atomic loads.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct AmdQueue {
    /// The HSA queue.
    pub hsa_queue: Queue,
    /// Reserved.
    pub reserved1: [u32; 4],
    /// (volatile) The next packet id a producer reserves.
    pub write_dispatch_id: u64,
    /// High 32 bits of the group segment aperture base.
    pub group_segment_aperture_base_hi: u32,
    /// High 32 bits of the private segment aperture base.
    pub private_segment_aperture_base_hi: u32,
    /// Highest compute unit id.
    pub max_cu_id: u32,
    /// Highest wave id.
    pub max_wave_id: u32,
    /// (volatile) Legacy doorbell bookkeeping.
    pub max_legacy_doorbell_dispatch_id_plus_1: u64,
    /// (volatile) Legacy doorbell lock.
    pub legacy_doorbell_lock: u32,
    /// Reserved.
    pub reserved2: [u32; 9],
    /// (volatile) The id of the packet the packet processor reads next.
    pub read_dispatch_id: u64,
    /// Byte offset of `read_dispatch_id` from the start of the queue's memory.
    pub read_dispatch_id_field_base_byte_offset: u32,
    /// `COMPUTE_TMPRING_SIZE` value for scratch.
    pub compute_tmpring_size: u32,
    /// Scratch buffer resource descriptor (V#).
    pub scratch_resource_descriptor: [u32; 4],
    /// Scratch backing memory address.
    pub scratch_backing_memory_location: u64,
    /// Scratch backing memory size in bytes.
    pub scratch_backing_memory_byte_size: u64,
    /// Scratch bytes per lane of a wave64.
    pub scratch_wave64_lane_byte_size: u32,
    /// `amd_queue_properties32_t` bits.
    pub queue_properties: u32,
    /// Reserved.
    pub reserved3: [u32; 2],
    /// Signal set when the queue becomes inactive.
    pub queue_inactive_signal: Signal,
    /// Reserved.
    pub reserved4: [u32; 14],
}

/// `AMD_QUEUE_ALIGN_BYTES`.
pub const AMD_QUEUE_ALIGN_BYTES: usize = 64;

/// Sizes, alignments and offsets of every struct of this module.
pub(crate) fn struct_layout_entries(out: &mut Vec<crate::layout::LayoutEntry>) {
    handle_layout_entries(out);
    struct_layout!(out; Queue = "hsa_queue_t", size 40, align 8 {
        queue_type: "type" = 0,
        features: "features" = 4,
        base_address: "base_address" = 8,
        doorbell_signal: "doorbell_signal" = 16,
        size: "size" = 24,
        reserved1: "reserved1" = 28,
        id: "id" = 32,
    });
    struct_layout!(out; AmdQueue = "amd_queue_t", size 256, align 64 {
        hsa_queue: "hsa_queue" = 0,
        reserved1: "reserved1" = 40,
        write_dispatch_id: "write_dispatch_id" = 56,
        group_segment_aperture_base_hi: "group_segment_aperture_base_hi" = 64,
        private_segment_aperture_base_hi: "private_segment_aperture_base_hi" = 68,
        max_cu_id: "max_cu_id" = 72,
        max_wave_id: "max_wave_id" = 76,
        max_legacy_doorbell_dispatch_id_plus_1: "max_legacy_doorbell_dispatch_id_plus_1" = 80,
        legacy_doorbell_lock: "legacy_doorbell_lock" = 88,
        reserved2: "reserved2" = 92,
        read_dispatch_id: "read_dispatch_id" = 128,
        read_dispatch_id_field_base_byte_offset: "read_dispatch_id_field_base_byte_offset" = 136,
        compute_tmpring_size: "compute_tmpring_size" = 140,
        scratch_resource_descriptor: "scratch_resource_descriptor" = 144,
        scratch_backing_memory_location: "scratch_backing_memory_location" = 160,
        scratch_backing_memory_byte_size: "scratch_backing_memory_byte_size" = 168,
        scratch_wave64_lane_byte_size: "scratch_wave64_lane_byte_size" = 176,
        queue_properties: "queue_properties" = 180,
        reserved3: "reserved3" = 184,
        queue_inactive_signal: "queue_inactive_signal" = 192,
        reserved4: "reserved4" = 200,
    });
    out.push(crate::layout::LayoutEntry::size("AMD_QUEUE_ALIGN_BYTES", AMD_QUEUE_ALIGN_BYTES));
    out.push(crate::layout::LayoutEntry::size("sizeof(hsa_signal_value_t)", size_of::<SignalValue>()));
}
