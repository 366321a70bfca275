//! The conformance suite on the HSA backend, over the soft HSA runtime (`libsoft_hsa.so`, which
//! cargo builds for this test as a dev-dependency's cdylib; missing, every test fails).
//!
//! The runtime fixes its GPU agents at the first `hsa_init` from `REDLINE_SOFT_HSA_ISA`; the
//! suite opens one device per family, so each test runs its body in a child process of this test
//! binary started with one agent per target of [`conformance::TARGETS`], and passes only when
//! the child ran that one test and passed it.

use std::process::Command;
use std::sync::{Arc, OnceLock};

use hsa_device::HsaDevice;
use hsa_sys::Hsa;
use pm4_encoding::Target;

/// Set in the child process that runs one body.
const CHILD_ENV: &str = "REDLINE_CONFORMANCE_CHILD";

/// `REDLINE_SOFT_HSA_ISA` for the suite: one GPU agent per target, in order.
fn agents() -> String {
    conformance::TARGETS.iter().map(Target::to_string).collect::<Vec<_>>().join(",")
}

/// The runtime, loaded once per process by path.
fn runtime() -> Arc<Hsa> {
    static RUNTIME: OnceLock<Arc<Hsa>> = OnceLock::new();
    Arc::clone(RUNTIME.get_or_init(|| {
        let path = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
        Arc::new(Hsa::load_from(std::slice::from_ref(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
    }))
}

/// A fresh HSA device on the agent of `target`.
fn open(target: Target) -> HsaDevice {
    assert_eq!(std::env::var(soft_hsa::ISA_ENV).ok(), Some(agents()), "the child runs with the suite's agents");
    HsaDevice::open_target(runtime(), target).unwrap_or_else(|error| panic!("{target}: {error}"))
}

/// Runs `name`'s body in a child process with the suite's agents (in the child: here).
fn in_child(name: &str, body: &dyn Fn()) {
    if std::env::var_os(CHILD_ENV).is_some() {
        body();
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .env(soft_hsa::ISA_ENV, agents())
        .env(CHILD_ENV, "1")
        .args(["--exact", name, "--test-threads", "1", "--nocapture"])
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{name} on the HSA backend:\n{text}");
    assert!(text.contains("test result: ok. 1 passed"), "{name}: the child did not run exactly it:\n{text}");
}

conformance::suite!(open, in_child);

/// The HSA backend's topology is the runtime's: as many GPUs visible as agents it was started
/// with, one of them driven.
#[test]
fn the_topology_counts_the_runtime_agents() {
    in_child("the_topology_counts_the_runtime_agents", &|| {
        for target in conformance::TARGETS {
            let device = open(target);
            let topology = hal::Device::topology(&device);
            assert_eq!(topology.gpus_visible, u32::try_from(conformance::TARGETS.len()).unwrap(), "{target}");
            assert_eq!(topology.gpus_used, 1);
        }
    });
}
