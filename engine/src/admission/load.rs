//! The admissions registry a program carries (`registry/admissions.json`, checked against the
//! sealed fixtures of `registry/fixtures.json`), or one read from a file instead.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{AdmissionError, AdmissionRegistry};
use crate::golden::registry::{Registry, RegistryError};

/// `registry/admissions.json` as built into the program.
pub const EMBEDDED_ADMISSIONS: &str = include_str!("../../../registry/admissions.json");
/// `registry/fixtures.json` as built into the program.
pub const EMBEDDED_FIXTURES: &str = include_str!("../../../registry/fixtures.json");

/// The largest registry file read (admissions, fixtures): 16 MiB.
pub const REGISTRY_LIMIT: infile::Limit = infile::Limit::new("registry", infile::mib(16));

/// Why the admissions registry did not load.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The fixture registry built into the program does not parse.
    #[error("the embedded fixture registry")]
    EmbeddedFixtures(#[source] RegistryError),
    /// The admissions built into the program do not parse.
    #[error("the embedded admissions")]
    Embedded(#[source] AdmissionError),
    /// The file could not be read, or is over [`REGISTRY_LIMIT`].
    #[error(transparent)]
    Read(infile::ReadError),
    /// The file is not an admissions registry: its path, and why.
    #[error("{}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why, naming the row and field.
        source: AdmissionError,
    },
}

impl LoadError {
    /// Whether the file given is at fault (a registry that does not parse, a file over the
    /// limit), as opposed to this machine (a file that cannot be read).
    #[must_use]
    pub fn is_invalid_input(&self) -> bool {
        match self {
            Self::Parse { .. } => true,
            Self::Read(error) => error.is_invalid_input(),
            Self::EmbeddedFixtures(_) | Self::Embedded(_) => false,
        }
    }
}

/// The fixture ids of a fixture registry's text.
///
/// # Errors
/// The text is not a fixture registry.
pub fn fixture_ids(text: &str) -> Result<BTreeSet<String>, RegistryError> {
    Ok(Registry::parse(text)?.fixtures.into_iter().map(|f| f.id).collect())
}

/// The admissions registry: `path` when given (its fixture ids checked against the embedded
/// fixture registry), else the embedded one, with every row's evidence judged by the embedded
/// fixtures' sealing promotions ([`AdmissionRegistry::with_promotions`]).
///
/// # Errors
/// Reading (an I/O error, or a file over [`REGISTRY_LIMIT`]) or parsing (invalid input), naming
/// the file, row and field.
pub fn load(path: Option<&Path>) -> Result<AdmissionRegistry, LoadError> {
    let registry = Registry::parse(EMBEDDED_FIXTURES).map_err(LoadError::EmbeddedFixtures)?;
    let fixtures: BTreeSet<String> = registry.fixtures.iter().map(|f| f.id.clone()).collect();
    let admissions = match path {
        Some(path) => {
            let text = infile::read_to_string(path, REGISTRY_LIMIT).map_err(LoadError::Read)?;
            AdmissionRegistry::parse(&text, Some(&fixtures))
                .map_err(|source| LoadError::Parse { path: path.to_owned(), source })?
        }
        None => AdmissionRegistry::parse(EMBEDDED_ADMISSIONS, Some(&fixtures)).map_err(LoadError::Embedded)?,
    };
    Ok(admissions.with_promotions(&registry))
}
