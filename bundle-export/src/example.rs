//! A built-in example workload (`engine::examples`) recorded on a soft device and exported as a
//! bundle that starts from the state the recording left (`redline lower --example`).

use engine::examples;
use engine::funnel::Funnel;
use engine::replay::capture_tape;
use pm4_encoding::Target;
use soft_device::SimDevice;
use tape_core::tape::Tape;

use crate::Refused;
use crate::export::{self, ExportOptions, Exported, TapeRegion};

/// Positions an example is recorded at.
pub const EXAMPLE_POSITIONS: [u32; 3] = [0, 1, 2];

/// Records the example `name` at [`EXAMPLE_POSITIONS`] and exports it from the state it leaves,
/// patched for `position` (default: the one after the recorded ones).
///
/// # Errors
/// [`Refused`]: an unknown example, a failed recording or export.
pub fn lower(name: &str, target: Target, va_base: u64, position: Option<u32>) -> Result<(Tape, Exported), Refused> {
    let mut device = SimDevice::new(target);
    let mut workload = examples::example(name, &mut device).map_err(|e| Refused(e.to_string()))?;
    let mut funnel = Funnel::new(4096);
    let tape = capture_tape(&mut device, &mut funnel, workload.as_mut(), &EXAMPLE_POSITIONS).map_err(Refused)?;
    let position = position.unwrap_or(tape.position() + 1);
    let options = ExportOptions { target, position, va_base };
    let exported = export::export(&tape, options, &mut device_bytes(&mut device)).map_err(Refused::of)?;
    Ok((tape, exported))
}

/// A region's initial bytes read from the device the tape was recorded on: a region is an
/// allocation of that device, and its bytes there are the primed state.
pub(crate) fn device_bytes(device: &mut SimDevice) -> impl FnMut(&TapeRegion) -> Vec<u8> + '_ {
    move |region| {
        // The recorded allocation may end before the region's rounded size: read what the tape
        // reaches and give the rest as zeros.
        let mut bytes = vec![0u8; usize::try_from(region.extent).unwrap_or(0)];
        match hal::Device::read(device, region.va, &mut bytes) {
            Ok(()) => {
                bytes.resize(usize::try_from(region.size).unwrap_or(0), 0);
                bytes
            }
            Err(_) => Vec::new(),
        }
    }
}
