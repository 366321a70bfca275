//! Behaviour of [`HsaStatus`] beyond the generated constants.

use core::fmt;

use crate::HsaStatus;

impl HsaStatus {
    /// `HSA_STATUS_SUCCESS`.
    #[must_use]
    pub fn is_success(self) -> bool {
        self == Self::SUCCESS
    }

    /// `Ok(())` for `HSA_STATUS_SUCCESS`, else the status as an error. `HSA_STATUS_INFO_BREAK`
    /// counts as an error here: it is success only for an iteration the caller broke off.
    ///
    /// # Errors
    ///
    /// `self` when it is not `HSA_STATUS_SUCCESS`.
    pub fn ok(self) -> Result<(), HsaStatus> {
        if self.is_success() { Ok(()) } else { Err(self) }
    }
}

impl fmt::Display for HsaStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.name(), self.description()) {
            (Some(name), Some(description)) => write!(f, "{name} ({:#x}): {description}", self.0),
            (Some(name), None) => write!(f, "{name} ({:#x})", self.0),
            _ => write!(f, "unknown hsa_status_t {:#x}", self.0),
        }
    }
}

impl std::error::Error for HsaStatus {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_descriptions_come_from_the_header() {
        let status = HsaStatus::ERROR_OUT_OF_RESOURCES;
        assert_eq!(status.0, 0x1008);
        assert_eq!(status.name(), Some("HSA_STATUS_ERROR_OUT_OF_RESOURCES"));
        assert!(status.description().is_some_and(|text| text.starts_with("The HSA runtime failed to allocate")));
        assert_eq!(HsaStatus::ERROR_INVALID_MEMORY_POOL.0, 40, "hsa_ext_amd.h additions are decimal");
        assert_eq!(HsaStatus(0x7777).name(), None);
        assert_eq!(format!("{:?}", HsaStatus::SUCCESS), "HsaStatus(HSA_STATUS_SUCCESS)");
        assert_eq!(HsaStatus(0x7777).to_string(), "unknown hsa_status_t 0x7777");
        assert!(HsaStatus::ERROR.to_string().starts_with("HSA_STATUS_ERROR (0x1000): A generic error"));
    }

    #[test]
    fn every_status_has_a_unique_value_and_a_description() {
        for (index, (status, name, description)) in HsaStatus::ALL.iter().enumerate() {
            assert!(name.starts_with("HSA_STATUS_"), "{name}");
            assert!(!description.is_empty(), "{name} has no description");
            assert!(!description.contains("  "), "{name}: {description}");
            assert!(HsaStatus::ALL[..index].iter().all(|(other, _, _)| other != status), "{name} repeats a value");
        }
    }
}
