//! Heap allocations of a replay in steady state, counted per thread by a wrapping global
//! allocator. The plan's host half (liveness check, binding patch, signal reset, publish) must
//! not allocate at all; the device half (doorbell, the soft device's packet processing and CPU
//! kernel execution, wait) is measured and reported, and the plan's own code in it is checked
//! apart from the sim's processing.

mod tape_fixture;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use engine::plan::prepare;
use engine::sim::SimDevice;
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
fn the_plans_host_half_does_not_allocate() {
    for target in TARGETS {
        let mut device = SimDevice::new(target);
        let chain = Chain::new(&mut device);
        let tape = chain.tape(&device, 100);
        let mut plan = prepare(&mut device, &tape).unwrap();
        // Warm-up: the first token may grow the sim's report buffers.
        for position in 0..4 {
            plan.replay(&mut device, position, TIMEOUT).unwrap();
        }
        let (mut host, mut device_half) = (0, 0);
        for position in 0..TOKENS {
            let before = allocations();
            plan.publish_token(&mut device, position).unwrap();
            let published = allocations();
            plan.finish_token(&mut device, TIMEOUT).unwrap();
            host += published - before;
            device_half += allocations() - published;
        }
        assert_eq!(host, 0, "{target}: patch + signal reset + publish allocated");
        // The counter works: the sim's processing does allocate.
        assert!(device_half > 0, "{target}");
        // The device half is the sim's `submit` (packet processing, PM4 decode, hazard model, CPU
        // kernels) plus the plan's wait and checks; report it per token.
        println!(
            "{target}: {TOKENS} tokens, host half 0 allocations, device half {device_half} ({} per token)",
            device_half / u64::from(TOKENS)
        );
    }
}

#[test]
fn the_plans_wait_and_checks_do_not_allocate() {
    use aql_packets::SignalCondition;
    use engine::device::Device;
    // The plan's part of the device half outside `submit`: the bounded wait on its signal.
    let mut device = SimDevice::new(pm4_encoding::Target::Gfx1100);
    let signal = device.create_signal(0).unwrap();
    device.store_signal(signal, 1).unwrap();
    device.store_signal(signal, 0).unwrap();
    let before = allocations();
    for _ in 0..TOKENS {
        device.store_signal(signal, 0).unwrap();
        device.wait_signal(signal, SignalCondition::Eq, 0, TIMEOUT).unwrap();
    }
    assert_eq!(allocations() - before, 0);
}
