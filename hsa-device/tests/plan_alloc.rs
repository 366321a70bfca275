//! Heap allocations of the retained route's host side on the HSA backend over the soft HSA
//! runtime, counted for the calling thread by allocation-counter's global allocator: the host half of a
//! token (liveness check, binding values, patch-site stores into mapped kernarg memory, signal
//! reset, packet, doorbell) and its wait do not allocate, on either transport. The runtime's
//! packet-processor thread (the device side) is not counted.

use std::sync::Arc;
use std::time::Duration;

use engine::examples::Wide;
use engine::funnel::Funnel;
use hsa_device::HsaDevice;
use lowering::plan::{Transport, prepare_with};

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
            host += allocation_counter::measure(|| {
                plan.publish_token(&mut device, position).unwrap();
                plan.complete_token(&mut device, Duration::from_secs(10)).unwrap();
            })
            .count_total;
        }
        assert_eq!(host, 0, "{transport:?}: the host half or the wait allocated");
        // The counter works on this thread: preparing a plan allocates.
        let mut again = None;
        let preparing =
            allocation_counter::measure(|| again = Some(prepare_with(&mut device, &tape, transport).unwrap()));
        assert!(preparing.count_total > 0, "{transport:?}");
        let again = again.unwrap();
        again.release(&mut device).unwrap();
    }
}
