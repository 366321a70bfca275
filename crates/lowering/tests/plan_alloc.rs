//! Heap allocations of a replay in steady state, counted per thread by a wrapping global
//! allocator. The host's side of a token — its half (liveness check, binding values, signal
//! reset, packet, doorbell) and its wait — must not allocate at all, on either transport; the
//! device side (the soft device taking the stores, packet processing, PM4 decode, CPU kernel
//! execution) is measured and reported.

mod tape_fixture;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use lowering::plan::{Transport, prepare_with};
use soft_device::SimDevice;
use tape_fixture::{Chain, TARGETS};

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

const TOKENS: u32 = 64;
const TIMEOUT: Duration = Duration::from_millis(10);

#[test]
fn the_host_side_of_a_token_does_not_allocate_on_either_transport() {
    for target in TARGETS {
        for transport in [Transport::Pm4, Transport::Aql] {
            let mut device = SimDevice::new(target);
            let chain = Chain::new(&mut device);
            let tape = chain.tape(&device, 100);
            let mut plan = prepare_with(&mut device, &tape, transport).unwrap();
            // Warm-up: the first token may grow the sim's report buffers.
            for position in 0..4 {
                plan.replay(&mut device, position, TIMEOUT).unwrap();
            }
            let (mut host, mut device_side) = (0, 0);
            for position in 0..TOKENS {
                let before = allocations();
                plan.publish_token(&mut device, position).unwrap();
                let published = allocations();
                // The device side: on the soft device, the packet processor runs when asked.
                device.process();
                let processed = allocations();
                plan.complete_token(&mut device, TIMEOUT).unwrap();
                host += (published - before) + (allocations() - processed);
                device_side += processed - published;
            }
            assert_eq!(host, 0, "{target} {transport:?}: the host half or the wait allocated");
            // The counter works: the sim's processing does allocate.
            assert!(device_side > 0, "{target} {transport:?}");
            println!(
                "{target} {transport:?}: {TOKENS} tokens, host side 0 allocations, device side {device_side} ({} per token)",
                device_side / u64::from(TOKENS)
            );
        }
    }
}
