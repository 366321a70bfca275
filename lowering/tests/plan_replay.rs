//! Prepared plans on every target: replays at many positions give, after each token, the bytes
//! of the ordinary launch path run through the same positions on a second, identically laid-out
//! device; a reset or a freed buffer makes a plan stale (refused without touching the device);
//! a fault is a typed error, not retried, and poisons the plan.

mod tape_fixture;

use std::time::Duration;

use hal::{Device, Submission, WaitError};
use lowering::lower::PatchError;
use lowering::plan::{PrepareError, ReplayError, ReplayOutcome, prepare};
use pm4_encoding::Target;
use soft_device::SimDevice;
use tape_fixture::{Chain, TARGETS, expected_y_first_step};

const RECORDED_AT: u32 = 100;
/// Replay positions: more than 8, not monotonic, including the recorded one.
const POSITIONS: [u32; 10] = [100, 0, 1, 7, 424, 250, 399, 50, 300, 100];
const TIMEOUT: Duration = Duration::from_millis(10);

fn device_with_chain(target: Target) -> (SimDevice, Chain) {
    let mut device = SimDevice::new(target);
    let chain = Chain::new(&mut device);
    (device, chain)
}

#[test]
fn replays_match_ordinary_runs_at_every_position() {
    for target in TARGETS {
        let (mut device, chain) = device_with_chain(target);
        let tape = chain.tape(&device, RECORDED_AT);
        let mut plan = prepare(&mut device, &tape).unwrap();
        let identity = plan.submission_identity();
        assert_eq!((identity.dispatches, identity.packets_per_token, identity.queues), (4, 1, 1), "{target}");
        // fill(z) is independent of fill(y); axpy and scale each wait: boundaries [2, 3].
        assert_eq!(identity.phases, 3, "{target}");
        assert_eq!(identity.pm4_dwords, usize::try_from(plan.ib().unwrap().size / 4).unwrap(), "{target}");
        assert_eq!(plan.tape_identity(), tape.identity());

        let (mut ordinary, ordinary_chain) = device_with_chain(target);
        let mut previous = None;
        for (step, position) in POSITIONS.into_iter().enumerate() {
            let outcome = plan.replay(&mut device, position, TIMEOUT).unwrap();
            let submission = Submission { first: u64::try_from(step).unwrap(), end: u64::try_from(step).unwrap() + 1 };
            assert_eq!(outcome, ReplayOutcome { position, packets: 1, submission, signal_value: 0 }, "{target}");
            ordinary_chain.run_ordinary(&mut ordinary, position);
            let replayed = chain.outputs(&mut device);
            assert_eq!(replayed, ordinary_chain.outputs(&mut ordinary), "{target}: step {step}, position {position}");
            if step == 0 {
                assert_eq!(replayed[0], expected_y_first_step(position), "{target}");
            }
            assert_ne!(Some(&replayed), previous.as_ref(), "{target}: step {step} changed nothing");
            previous = Some(replayed);
        }
        // One packet per token on the plan's queue, each completed.
        let queue = device.queue(identity.queue).unwrap();
        assert_eq!((queue.write_index(), queue.read_index()), (10, 10), "{target}");
        assert_eq!(device.last_ib_reports().len(), 1);
        assert_eq!(device.last_ib_reports()[0].dispatches.len(), 4);
    }
}

#[test]
fn a_reset_makes_the_plan_stale_and_a_new_plan_works() {
    for target in TARGETS {
        let (mut device, chain) = device_with_chain(target);
        let tape = chain.tape(&device, RECORDED_AT);
        let mut plan = prepare(&mut device, &tape).unwrap();
        plan.replay(&mut device, 3, TIMEOUT).unwrap();
        assert_eq!(plan.epoch(), 0);

        device.reset();
        assert_eq!(device.lifetime().epoch, 1);
        let chain = Chain::new(&mut device);
        let allocations = device.memory().len();
        let result = plan.replay(&mut device, 5, TIMEOUT);
        assert!(
            matches!(result, Err(ReplayError::StalePlan { plan_epoch: 0, device_epoch: 1 })),
            "{target}: {result:?}"
        );
        assert_eq!(device.memory().len(), allocations, "{target}: the device was touched");
        assert_eq!(chain.outputs(&mut device)[0], vec![0u8; 4 * 1024], "{target}: y was written");
        // A stale plan owns nothing: releasing it frees nothing of the new epoch.
        plan.release(&mut device).unwrap();
        assert_eq!(device.memory().len(), allocations);

        let tape = chain.tape(&device, RECORDED_AT);
        let mut plan = prepare(&mut device, &tape).unwrap();
        assert_eq!(plan.epoch(), 1);
        plan.replay(&mut device, 5, TIMEOUT).unwrap();
        assert_eq!(chain.outputs(&mut device)[0], expected_y_first_step(5), "{target}");
    }
}

#[test]
fn a_freed_buffer_makes_the_plan_stale() {
    let (mut device, chain) = device_with_chain(Target::Gfx1100);
    let tape = chain.tape(&device, RECORDED_AT);
    let mut plan = prepare(&mut device, &tape).unwrap();
    plan.replay(&mut device, 1, TIMEOUT).unwrap();
    // Freeing an allocation the plan does not point into changes nothing.
    let scratch = device.allocate(64).unwrap();
    device.free(scratch).unwrap();
    plan.replay(&mut device, 2, TIMEOUT).unwrap();

    device.free(chain.z).unwrap();
    let result = plan.replay(&mut device, 3, TIMEOUT);
    assert!(
        matches!(result, Err(ReplayError::AllocationGone { allocation, va }) if allocation == chain.z.id && va == chain.z.va),
        "{result:?}"
    );
    let queue = device.queue(plan.submission_identity().queue).unwrap();
    assert_eq!(queue.write_index(), 2, "nothing published for the refused replay");
}

#[test]
fn a_fault_is_an_error_is_not_retried_and_poisons_the_plan() {
    for target in TARGETS {
        let (mut device, chain) = device_with_chain(target);
        let tape = chain.tape(&device, RECORDED_AT);
        let mut plan = prepare(&mut device, &tape).unwrap();
        plan.replay(&mut device, 10, TIMEOUT).unwrap();

        // A type-3 header with an opcode no family defines, over the IB's first packet.
        device.write(plan.ib().unwrap().va, &0xC000_FF00u32.to_le_bytes()).unwrap();
        // The doorbell returns at once; the fault reaches the host through its wait.
        let result = plan.replay(&mut device, 11, TIMEOUT);
        assert!(
            matches!(result, Err(ReplayError::Wait { position: 11, source: WaitError::Fault { .. } })),
            "{target}: {result:?}"
        );
        assert_eq!(plan.poisoned(), Some(11));
        let queue = device.queue(plan.submission_identity().queue).unwrap();
        assert!(!queue.is_active(), "{target}");
        assert_eq!(queue.write_index(), 2, "{target}: one packet per token, no retry");

        let result = plan.replay(&mut device, 12, TIMEOUT);
        assert!(matches!(result, Err(ReplayError::Poisoned { failed_position: 11 })), "{target}: {result:?}");
        assert_eq!(device.queue(plan.submission_identity().queue).unwrap().write_index(), 2, "{target}");
    }
}

#[test]
fn a_position_without_a_binding_value_writes_nothing_and_does_not_poison() {
    let (mut device, chain) = device_with_chain(Target::Gfx1201);
    let tape = chain.tape(&device, RECORDED_AT);
    let mut plan = prepare(&mut device, &tape).unwrap();
    plan.replay(&mut device, 20, TIMEOUT).unwrap();
    let before = chain.outputs(&mut device);
    let result = plan.replay(&mut device, u32::MAX, TIMEOUT);
    assert!(matches!(result, Err(ReplayError::Patch(PatchError::Binding { binding: 0, .. }))), "{result:?}");
    assert_eq!(plan.poisoned(), None);
    assert_eq!(chain.outputs(&mut device), before);
    plan.replay(&mut device, 21, TIMEOUT).unwrap();
}

#[test]
fn token_halves_are_checked() {
    let (mut device, chain) = device_with_chain(Target::Gfx1030);
    let tape = chain.tape(&device, RECORDED_AT);
    let mut plan = prepare(&mut device, &tape).unwrap();
    assert!(matches!(plan.complete_token(&mut device, TIMEOUT), Err(ReplayError::NothingPublished)));
    assert_eq!(plan.publish_token(&mut device, 4).unwrap(), Submission { first: 0, end: 1 });
    assert!(matches!(plan.publish_token(&mut device, 5), Err(ReplayError::TokenPending { pending: 4 })));
    let outcome = plan.complete_token(&mut device, TIMEOUT).unwrap();
    assert_eq!(outcome.position, 4);
    assert_eq!(chain.outputs(&mut device)[0], expected_y_first_step(4));
}

#[test]
fn a_tape_from_another_device_is_refused_and_nothing_is_left_behind() {
    let (device, chain) = device_with_chain(Target::Gfx1100);
    let tape = chain.tape(&device, RECORDED_AT);
    // Same kernels, no buffers: the tape's pointers lead nowhere.
    let mut other = SimDevice::new(Target::Gfx1100);
    for name in ["fill", "axpy", "scale"] {
        tape_fixture::load(&mut other, name);
    }
    let allocations = other.memory().len();
    let result = prepare(&mut other, &tape);
    assert!(matches!(result, Err(PrepareError::PointerNotLive { launch: 0, kernarg_offset: 0, .. })), "{result:?}");
    assert_eq!(other.memory().len(), allocations);
}

#[test]
fn release_frees_everything_the_plan_made() {
    let (mut device, chain) = device_with_chain(Target::Gfx1100);
    let tape = chain.tape(&device, RECORDED_AT);
    let allocations = device.memory().len();
    let plan = prepare(&mut device, &tape).unwrap();
    // Kernargs, IB, ring.
    assert_eq!(device.memory().len(), allocations + 3);
    let queue = plan.submission_identity().queue;
    plan.release(&mut device).unwrap();
    assert_eq!(device.memory().len(), allocations);
    assert!(device.queue(queue).is_none());
}
