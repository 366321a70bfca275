//! What the runtime says about the agent a device drives and about itself: names, PCI location,
//! runtime version and build (for records such as `redline bench`'s report).
//!
//! Every attribute is queried on its own, so one the runtime refuses is an `Err` naming the call
//! and its status while the others are still read.

use core::ffi::{c_char, c_void};

use hal::BackendError;
use hsa_sys::{Agent, AgentInfo, AmdAgentInfo, Hsa, SystemInfo};

use crate::discover::check;

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

/// Reads an attribute of `size_of::<T>()` bytes.
fn plain<T: Default>(hsa: &Hsa, agent: Agent, attribute: u32) -> Result<T, BackendError> {
    let mut value = T::default();
    // SAFETY: callers pair each attribute with the plain integer type its header documentation
    // names, so the runtime writes exactly `size_of::<T>()` bytes into `value`.
    let status = unsafe { (hsa.fns().hsa_agent_get_info)(agent, AgentInfo(attribute), (&raw mut value).cast()) };
    check("hsa_agent_get_info", status)?;
    Ok(value)
}

/// Reads a fixed-size character attribute of `N` bytes, up to its first NUL.
fn chars<const N: usize>(hsa: &Hsa, agent: Agent, attribute: u32) -> Result<String, BackendError> {
    let mut bytes = [0u8; N];
    // SAFETY: the attribute is a character array of `N` bytes (the constants above name the
    // header sentence), which `bytes` holds.
    let status = unsafe { (hsa.fns().hsa_agent_get_info)(agent, AgentInfo(attribute), bytes.as_mut_ptr().cast()) };
    check("hsa_agent_get_info", status)?;
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(N);
    Ok(String::from_utf8_lossy(&bytes[..end]).trim().to_owned())
}

fn system_u16(hsa: &Hsa, attribute: SystemInfo) -> Result<u16, BackendError> {
    let mut value = 0u16;
    // SAFETY: VERSION_MAJOR and VERSION_MINOR are uint16_t (hsa.h).
    let status = unsafe { (hsa.fns().hsa_system_get_info)(attribute, (&raw mut value).cast::<c_void>()) };
    check("hsa_system_get_info", status)?;
    Ok(value)
}

fn build_version(hsa: &Hsa) -> Result<String, BackendError> {
    let mut text: *const c_char = core::ptr::null();
    // SAFETY: HSA_AMD_SYSTEM_INFO_BUILD_VERSION is a `const char*` (hsa_ext_amd.h), written into
    // `text`.
    let status =
        unsafe { (hsa.fns().hsa_system_get_info)(SystemInfo::AMD_BUILD_VERSION, (&raw mut text).cast::<c_void>()) };
    check("hsa_system_get_info", status)?;
    if text.is_null() {
        return Ok(String::new());
    }
    let mut bytes = Vec::new();
    while bytes.len() < BUILD_VERSION_BYTES_MAX {
        // SAFETY: the runtime returned a NUL-terminated string that lives as long as the runtime
        // (ROCr: a string literal; soft-hsa: a `static` CStr); reading stops at its NUL, so every
        // byte read is inside it.
        let byte = unsafe { text.add(bytes.len()).cast::<u8>().read() };
        if byte == 0 {
            break;
        }
        bytes.push(byte);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Queries every attribute of [`AgentIdentity`] of `agent`. The runtime must be initialised.
pub(crate) fn query(hsa: &Hsa, agent: Agent) -> AgentIdentity {
    AgentIdentity {
        name: chars::<AGENT_NAME_BYTES>(hsa, agent, AgentInfo::NAME.0),
        vendor: chars::<AGENT_NAME_BYTES>(hsa, agent, AgentInfo::VENDOR_NAME.0),
        product: chars::<AGENT_NAME_BYTES>(hsa, agent, AmdAgentInfo::PRODUCT_NAME.0),
        chip_id: plain(hsa, agent, AmdAgentInfo::CHIP_ID.0),
        pci_domain: plain(hsa, agent, AmdAgentInfo::DOMAIN.0),
        pci_bdfid: plain(hsa, agent, AmdAgentInfo::BDFID.0),
        uuid: chars::<AGENT_UUID_BYTES>(hsa, agent, AmdAgentInfo::UUID.0),
        spec_version: system_u16(hsa, SystemInfo::VERSION_MAJOR)
            .and_then(|major| Ok((major, system_u16(hsa, SystemInfo::VERSION_MINOR)?))),
        build_version: build_version(hsa),
        software_runtime: hsa.extensions().redline_soft_hsa_inject.is_some(),
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
