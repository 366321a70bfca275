//! Heap allocations of a replay in steady state, counted per thread by allocation-counter's
//! global allocator. The host's side of a token — its half (liveness check, binding values, signal
//! reset, packet, doorbell) and its wait — must not allocate at all, on either transport; the
//! device side (the soft device taking the stores, packet processing, PM4 decode, CPU kernel
//! execution) is measured and reported.

mod tape_fixture;

use std::time::Duration;

use lowering::plan::{Transport, prepare_with};
use soft_device::SimDevice;
use tape_fixture::{Chain, TARGETS};

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
                let published = allocation_counter::measure(|| {
                    plan.publish_token(&mut device, position).unwrap();
                });
                // The device side: on the soft device, the packet processor runs when asked.
                let processed = allocation_counter::measure(|| device.process());
                let completed = allocation_counter::measure(|| {
                    plan.complete_token(&mut device, TIMEOUT).unwrap();
                });
                host += published.count_total + completed.count_total;
                device_side += processed.count_total;
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
