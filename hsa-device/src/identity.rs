//! What the runtime says about the agent a device drives and about itself: names, PCI location,
//! runtime version and build (for records such as `redline bench`'s report).
//!
//! Every attribute is queried on its own, so one the runtime refuses is an `Err` naming the call
//! and its status while the others are still read.

use hal::BackendError;
use hsa_sys::Agent;

use crate::ffi::{AgentText, AgentU32, Runtime};

/// Bytes of `HSA_AGENT_INFO_NAME`, `HSA_AGENT_INFO_VENDOR_NAME` and
/// `HSA_AMD_AGENT_INFO_PRODUCT_NAME` (hsa.h: "an ASCII string of 64 chars").
pub const AGENT_NAME_BYTES: usize = 64;
/// Bytes of `HSA_AMD_AGENT_INFO_UUID` (hsa_ext_amd.h: "a maximum of 21 chars including NUL").
pub const AGENT_UUID_BYTES: usize = 21;
/// Longest `HSA_AMD_SYSTEM_INFO_BUILD_VERSION` read, bytes; a longer one is cut there.
pub const BUILD_VERSION_BYTES_MAX: usize = 256;

/// The agent's and the runtime's identity as the runtime reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentIdentity {
    /// `HSA_AGENT_INFO_NAME` (ROCr: the processor, `gfx1100`).
    pub name: Result<String, BackendError>,
    /// `HSA_AGENT_INFO_VENDOR_NAME`.
    pub vendor: Result<String, BackendError>,
    /// `HSA_AMD_AGENT_INFO_PRODUCT_NAME` (the board's marketing name).
    pub product: Result<String, BackendError>,
    /// `HSA_AMD_AGENT_INFO_CHIP_ID` (the PCI device id).
    pub chip_id: Result<u32, BackendError>,
    /// `HSA_AMD_AGENT_INFO_DOMAIN` (the PCI domain).
    pub pci_domain: Result<u32, BackendError>,
    /// `HSA_AMD_AGENT_INFO_BDFID`: bus `[15:8]`, device `[7:3]`, function `[2:0]`.
    pub pci_bdfid: Result<u32, BackendError>,
    /// `HSA_AMD_AGENT_INFO_UUID` (`GPU-XX` for an agent without one).
    pub uuid: Result<String, BackendError>,
    /// `HSA_SYSTEM_INFO_VERSION_MAJOR` and `_MINOR`: the HSA specification version supported.
    pub spec_version: Result<(u16, u16), BackendError>,
    /// `HSA_AMD_SYSTEM_INFO_BUILD_VERSION`: the runtime's build identifier.
    pub build_version: Result<String, BackendError>,
    /// Whether the runtime exports the soft HSA runtime's extension (`redline_soft_hsa_inject`):
    /// then it is `soft-hsa`, a software runtime over the soft device, and no GPU is behind it.
    pub software_runtime: bool,
}

/// Queries every attribute of [`AgentIdentity`] of `agent`. The runtime must be initialised.
pub(crate) fn query(runtime: &Runtime, agent: Agent) -> AgentIdentity {
    AgentIdentity {
        name: runtime.agent_text(agent, AgentText::Name),
        vendor: runtime.agent_text(agent, AgentText::VendorName),
        product: runtime.agent_text(agent, AgentText::ProductName),
        chip_id: runtime.agent_u32(agent, AgentU32::ChipId),
        pci_domain: runtime.agent_u32(agent, AgentU32::Domain),
        pci_bdfid: runtime.agent_u32(agent, AgentU32::Bdfid),
        uuid: runtime.agent_text(agent, AgentText::Uuid),
        spec_version: runtime.spec_version_part(false).and_then(|major| Ok((major, runtime.spec_version_part(true)?))),
        build_version: runtime.build_version(),
        software_runtime: runtime.hsa().extensions().redline_soft_hsa_inject.is_some(),
    }
}

/// The PCI address `domain:bus:device.function` (`0000:03:00.0`) of a domain and a BDFID.
#[must_use]
pub fn pci_address(domain: u32, bdfid: u32) -> String {
    let (bus, device, function) = ((bdfid >> 8) & 0xff, (bdfid >> 3) & 0x1f, bdfid & 0x7);
    format!("{domain:04x}:{bus:02x}:{device:02x}.{function:x}")
}

#[cfg(test)]
mod tests {
    use super::pci_address;

    #[test]
    fn bdfids_split_into_bus_device_and_function() {
        assert_eq!(pci_address(0, 0), "0000:00:00.0");
        // Bus 0x03, device 0x1f, function 5: 0x03 << 8 | 0x1f << 3 | 5.
        assert_eq!(pci_address(1, 0x03fd), "0001:03:1f.5");
        assert_eq!(pci_address(0, 0xc100), "0000:c1:00.0");
    }
}
