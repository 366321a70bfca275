//! Behaviour of [`HipError`] beyond the generated constants.

use core::fmt;

use crate::HipError;

impl HipError {
    /// `hipSuccess`.
    #[must_use]
    pub fn is_success(self) -> bool {
        self == Self::SUCCESS
    }

    /// `Ok(())` for `hipSuccess`, else the code as an error.
    ///
    /// # Errors
    ///
    /// `self` when it is not `hipSuccess`.
    pub fn ok(self) -> Result<(), HipError> {
        if self.is_success() { Ok(()) } else { Err(self) }
    }
}

impl fmt::Display for HipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.name(), self.description()) {
            (Some(name), Some(description)) => write!(f, "{name} ({}): {description}", self.0),
            (Some(name), None) => write!(f, "{name} ({})", self.0),
            _ => write!(f, "unknown hipError_t {}", self.0),
        }
    }
}

impl std::error::Error for HipError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_descriptions_come_from_the_header() {
        assert_eq!(HipError::ERROR_INVALID_DEVICE.0, 101);
        assert_eq!(HipError::ERROR_INVALID_DEVICE.name(), Some("hipErrorInvalidDevice"));
        assert_eq!(HipError::ERROR_NO_DEVICE.0, 100);
        assert_eq!(HipError::ERROR_TBD.0, 1054, "implicit value after hipErrorRuntimeOther");
        // Aliases share a value; the first declared name wins.
        assert_eq!(HipError::ERROR_MEMORY_ALLOCATION, HipError::ERROR_OUT_OF_MEMORY);
        assert_eq!(HipError(2).name(), Some("hipErrorOutOfMemory"));
        assert_eq!(HipError::ERROR_DEINITIALIZED.description(), None, "the header has no comment for it");
        assert_eq!(
            HipError::ERROR_INVALID_DEVICE.to_string(),
            "hipErrorInvalidDevice (101): DeviceID must be in range 0...#compute-devices."
        );
        assert_eq!(HipError(-5).to_string(), "unknown hipError_t -5");
        assert_eq!(format!("{:?}", HipError::SUCCESS), "HipError(hipSuccess)");
    }

    #[test]
    fn every_name_is_unique() {
        for (index, (_, name, _)) in HipError::ALL.iter().enumerate() {
            assert!(name.starts_with("hip"), "{name}");
            assert!(HipError::ALL[..index].iter().all(|(_, other, _)| other != name), "{name} repeats");
        }
    }
}
