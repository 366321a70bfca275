//! Heap allocations of the retained route's host side on the HSA backend over the soft HSA
//! runtime, counted for the calling thread by a wrapping global allocator: the host half of a
//! token (liveness check, binding values, patch-site stores into mapped kernarg memory, signal
//! reset, packet, doorbell) and its wait do not allocate, on either transport. The runtime's
//! packet-processor thread (the device side) is not counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

use engine::examples::Wide;
use engine::funnel::Funnel;
use hsa_device::HsaDevice;
use lowering::plan::{Transport, prepare_with};

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// `System`, counting allocations and reallocations of the calling thread.
struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees hold; the counter is a const-initialised thread-local `Cell`, which neither
// allocates nor re-enters the allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract for `alloc` is `System::alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, i.e. from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: `ptr` came from `System` with `layout`; the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn the_host_side_of_a_token_does_not_allocate_on_the_hsa_backend() {
    let path = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
    let hsa = Arc::new(hsa_sys::Hsa::load_from(std::slice::from_ref(&path)).unwrap());
    for transport in [Transport::Pm4, Transport::Aql] {
        let mut device = HsaDevice::open(Arc::clone(&hsa), 0).unwrap();
        let mut funnel = Funnel::new(256);
        let mut wide = Wide::new(&mut device, 100).unwrap();
        let tape = engine::replay::capture_tape(&mut device, &mut funnel, &mut wide, &[3, 4, 5]).unwrap();
        let mut plan = prepare_with(&mut device, &tape, transport).unwrap();
        for position in 6..10 {
            plan.replay(&mut device, position, Duration::from_secs(10)).unwrap();
        }
        let mut host = 0;
        for position in 10..74 {
            let before = allocations();
            plan.publish_token(&mut device, position).unwrap();
            plan.complete_token(&mut device, Duration::from_secs(10)).unwrap();
            host += allocations() - before;
        }
        assert_eq!(host, 0, "{transport:?}: the host half or the wait allocated");
        // The counter works on this thread: preparing a plan allocates.
        let before = allocations();
        let again = prepare_with(&mut device, &tape, transport).unwrap();
        assert!(allocations() > before, "{transport:?}");
        again.release(&mut device).unwrap();
    }
}
