//! Finding and opening a library, and the load errors.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

use libloading::os::unix;

/// One failed `dlopen` of a candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenAttempt {
    /// The name or path handed to `dlopen`.
    pub candidate: PathBuf,
    /// The `dlerror` text.
    pub error: String,
}

/// Why the library could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// No candidate could be opened.
    NotFound {
        /// Every candidate, in the order tried, with its `dlopen` error.
        tried: Vec<OpenAttempt>,
    },
    /// A library opened but lacks symbols of the function table.
    MissingSymbols {
        /// The candidate that opened.
        library: PathBuf,
        /// Every missing symbol, in table order.
        missing: Vec<&'static str>,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound { tried } => write!(f, "the runtime library was not found; tried {}", Tried(tried)),
            Self::MissingSymbols { library, missing } => write!(
                f,
                "{} lacks {} symbols of the function table: {}",
                library.display(),
                missing.len(),
                missing.join(", ")
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// Formats the attempts of [`LoadError::NotFound`].
struct Tried<'a>(&'a [OpenAttempt]);

impl fmt::Display for Tried<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("no candidates");
        }
        for (index, attempt) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{} ({})", attempt.candidate.display(), attempt.error)?;
        }
        Ok(())
    }
}

/// The candidates to try: only the override when `env_override` is set and not empty, else
/// `defaults` in order.
pub fn candidates(env_override: Option<OsString>, defaults: &[&str]) -> Vec<PathBuf> {
    match env_override {
        Some(path) if !path.is_empty() => vec![PathBuf::from(path)],
        _ => defaults.iter().map(PathBuf::from).collect(),
    }
}

/// Opens the first candidate that `dlopen` accepts and returns it with the candidate that opened;
/// when none opens, [`LoadError::NotFound`] lists every attempt.
///
/// The flags are `RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE`:
/// `RTLD_NOW` so that a library with unresolved dependencies fails here rather than on a first
/// call; `RTLD_NODELETE` because the GPU runtimes start threads and register exit handlers that
/// would run into unmapped code if the last handle's `dlclose` unloaded them, so the code stays
/// mapped until the process exits.
pub fn open_first(candidates: &[PathBuf]) -> Result<(libloading::Library, PathBuf), LoadError> {
    let mut tried = Vec::with_capacity(candidates.len());
    for candidate in candidates {
        // SAFETY: `dlopen` runs the library's initialisers, which is sound for any library built
        // to be loaded into a process. The candidates are the bindings' names for the vendor
        // library, or the one path the user chose through the documented override and so vouches
        // for; `RTLD_LOCAL` keeps its symbols out of the global namespace.
        let opened = unsafe {
            unix::Library::open(Some(candidate.as_os_str()), unix::RTLD_NOW | unix::RTLD_LOCAL | libc::RTLD_NODELETE)
        };
        match opened {
            Ok(library) => return Ok((library.into(), candidate.clone())),
            Err(error) => tried.push(OpenAttempt { candidate: candidate.clone(), error: error.to_string() }),
        }
    }
    Err(LoadError::NotFound { tried })
}

/// The path of the object that defines `address`, per `dladdr`; `None` when the loader does not
/// know it.
///
/// `address` is only compared with the loader's tables, never dereferenced, so any value is fine.
#[expect(clippy::not_unsafe_ptr_arg_deref, reason = "dladdr never dereferences the address it looks up")]
pub fn object_path_of(address: *const core::ffi::c_void) -> Option<PathBuf> {
    let mut info = libc::Dl_info {
        dli_fname: core::ptr::null(),
        dli_fbase: core::ptr::null_mut(),
        dli_sname: core::ptr::null(),
        dli_saddr: core::ptr::null_mut(),
    };
    // SAFETY: `dladdr` only reads the loader's tables for `address` and writes `info`, which is a
    // valid, exclusively borrowed `Dl_info`.
    let found = unsafe { libc::dladdr(address, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: on success `dli_fname` points at the NUL-terminated path the loader keeps for the
    // object; it lives as long as the object stays loaded, and it is copied out before return.
    let name = unsafe { core::ffi::CStr::from_ptr(info.dli_fname) };
    let path = Path::new(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.to_bytes()));
    Some(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_replaces_the_defaults() {
        let defaults = ["liba.so.1", "liba.so"];
        assert_eq!(candidates(Some("/x/liba.so".into()), &defaults), vec![PathBuf::from("/x/liba.so")]);
        assert_eq!(candidates(None, &defaults), vec![PathBuf::from("liba.so.1"), PathBuf::from("liba.so")]);
        assert_eq!(candidates(Some(OsString::new()), &defaults).len(), 2, "an empty override counts as unset");
    }

    #[test]
    fn not_found_lists_every_attempt() {
        let tried = vec![PathBuf::from("/nonexistent/a.so"), PathBuf::from("/nonexistent/b.so")];
        let Err(error) = open_first(&tried) else { panic!("a nonexistent path opened") };
        let LoadError::NotFound { tried: attempts } = &error else { panic!("unexpected {error:?}") };
        assert_eq!(attempts.len(), 2);
        let text = error.to_string();
        assert!(text.contains("/nonexistent/a.so") && text.contains("/nonexistent/b.so"), "{text}");
    }

    #[test]
    fn missing_symbols_lists_them() {
        let error = LoadError::MissingSymbols { library: PathBuf::from("/x/liba.so"), missing: vec!["f", "g"] };
        assert_eq!(error.to_string(), "/x/liba.so lacks 2 symbols of the function table: f, g");
    }

    #[test]
    fn dladdr_names_the_object_of_a_libc_function() {
        let path = object_path_of(libc::strlen as *const core::ffi::c_void).expect("dladdr knows libc");
        assert!(path.to_string_lossy().contains("libc"), "{}", path.display());
    }
}
