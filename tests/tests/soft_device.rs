//! The conformance suite on the soft device.

conformance::suite!(soft_device::SimDevice::new);
