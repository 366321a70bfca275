//! `Runtime`: a loaded library together with its resolved function table.

use std::path::{Path, PathBuf};

use crate::{FnTable, LoadError, object_path_of, open_first};

/// A loaded library, kept open for as long as this value lives, and its function table `F`.
#[derive(Debug)]
pub struct Runtime<F> {
    fns: F,
    opened_as: PathBuf,
    library_path: PathBuf,
    // INVARIANT: declared last, so it is dropped after `fns`, and never handed out: every pointer
    // in `fns` stays valid for the life of `self`.
    _library: libloading::Library,
}

impl<F: FnTable> Runtime<F> {
    /// Loads the first of `candidates` that `dlopen` opens (a bare name goes through the dynamic
    /// loader's search path, a path is opened as is) and resolves `F` in it. A candidate that
    /// opens but lacks symbols is an error; later candidates are not tried.
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`] when no candidate opens, [`LoadError::MissingSymbols`] when the one
    /// that opens lacks symbols of `F`.
    ///
    /// # Safety
    ///
    /// As [`FnTable::resolve`]: any candidate that opens must be a build of the runtime whose
    /// prototypes `F` transcribes (or an ABI-compatible one).
    pub unsafe fn load_from(candidates: &[PathBuf]) -> Result<Self, LoadError> {
        let (library, opened_as) = open_first(candidates)?;
        // SAFETY: the caller vouches that the library that opened matches `F`'s prototypes. The
        // pointers are stored next to `library`, which outlives them (see the field INVARIANT).
        let fns = unsafe { F::resolve(&library) }
            .map_err(|missing| LoadError::MissingSymbols { library: opened_as.clone(), missing })?;
        let library_path = fns.probe_address().and_then(object_path_of).unwrap_or_else(|| opened_as.clone());
        Ok(Self { fns, opened_as, library_path, _library: library })
    }

    /// The raw function table. Its pointers are valid only while `self` is alive.
    #[must_use]
    pub fn fns(&self) -> &F {
        &self.fns
    }

    /// The candidate that opened, as it was handed to `dlopen`.
    #[must_use]
    pub fn opened_as(&self) -> &Path {
        &self.opened_as
    }

    /// The file the dynamic loader actually mapped (per `dladdr` of the table's first entry), or
    /// [`Runtime::opened_as`] when the loader does not say.
    #[must_use]
    pub fn library_path(&self) -> &Path {
        &self.library_path
    }
}

/// The loading entry points and accessors of a `-sys` crate's runtime type: `$ty` holds its
/// [`Runtime`] in a field named `runtime` and has an inherent `load_from(&[PathBuf])`, and the
/// crate defines `LIBRARY_ENV` (the override variable) and `DEFAULT_CANDIDATES`. Generates
/// `load`, `load_with_env`, `fns`, `opened_as` and `library_path`, the same for every runtime.
#[macro_export]
macro_rules! runtime_loader {
    ($ty:ident, $fns:ty, $first:literal) => {
        impl $ty {
            /// Loads the runtime from `LIBRARY_ENV` if it is set (and not empty), else from the
            /// first of `DEFAULT_CANDIDATES` that opens.
            ///
            /// # Errors
            ///
            /// [`LoadError::NotFound`] when no candidate opens, [`LoadError::MissingSymbols`] when
            /// the one that opens lacks symbols of the function table.
            pub fn load() -> Result<Self, LoadError> {
                Self::load_with_env(std::env::var_os(LIBRARY_ENV))
            }

            /// `load` with the value of `LIBRARY_ENV` passed in rather than read, for callers (and
            /// tests) that must not touch the process environment.
            ///
            /// # Errors
            ///
            /// As `load`.
            pub fn load_with_env(env_override: Option<std::ffi::OsString>) -> Result<Self, LoadError> {
                Self::load_from(&$crate::candidates(env_override, DEFAULT_CANDIDATES))
            }

            /// The raw function table. Its pointers are valid only while `self` is alive.
            #[must_use]
            pub fn fns(&self) -> &$fns {
                self.runtime.fns()
            }

            /// The candidate that opened, as it was handed to `dlopen`.
            #[must_use]
            pub fn opened_as(&self) -> &std::path::Path {
                self.runtime.opened_as()
            }

            #[doc = concat!("The file the dynamic loader actually mapped (per `dladdr` of `", $first, "`), or")]
            /// `opened_as` when the loader does not say.
            #[must_use]
            pub fn library_path(&self) -> &std::path::Path {
                self.runtime.library_path()
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    use tables::{AbsentFns, LibcFns};

    #[expect(unreachable_pub, reason = "fn_table! declares its tables `pub`")]
    mod tables {
        crate::fn_table! {
            /// Two libc functions.
            pub struct LibcFns {
                /// `strlen(3)`.
                strlen = "strlen": unsafe extern "C" fn(s: *const core::ffi::c_char) -> usize;
                /// `abs(3)`.
                abs = "abs": unsafe extern "C" fn(j: core::ffi::c_int) -> core::ffi::c_int;
            }
        }

        crate::fn_table! {
            /// Symbols libc does not define.
            pub struct AbsentFns {
                /// Not a libc function.
                absent_a = "dynload_absent_a": unsafe extern "C" fn();
                /// Not a libc function.
                absent_b = "dynload_absent_b": unsafe extern "C" fn() -> i32;
            }
        }
    }

    const LIBC: &str = "libc.so.6";

    #[test]
    fn loads_a_table_and_names_the_mapped_file() {
        // SAFETY: libc.so.6 exports `strlen` and `abs` with these C prototypes.
        let libc = unsafe { Runtime::<LibcFns>::load_from(&[PathBuf::from(LIBC)]) }.expect("libc opens");
        assert_eq!(libc.opened_as(), Path::new(LIBC));
        assert!(libc.library_path().to_string_lossy().contains("libc"), "{}", libc.library_path().display());
        // SAFETY: the argument is a NUL-terminated string; the pointer is valid while `libc` lives.
        assert_eq!(unsafe { (libc.fns().strlen)(c"four".as_ptr()) }, 4);
        assert_eq!(LibcFns::SYMBOLS, ["strlen", "abs"]);
    }

    #[test]
    fn missing_symbols_are_all_listed() {
        // SAFETY: libc exports neither symbol, so nothing is resolved.
        let error = unsafe { Runtime::<AbsentFns>::load_from(&[PathBuf::from(LIBC)]) }.expect_err("libc lacks them");
        assert_eq!(
            error,
            LoadError::MissingSymbols { library: PathBuf::from(LIBC), missing: AbsentFns::SYMBOLS.to_vec() }
        );
    }
}
