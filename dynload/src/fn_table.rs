//! `fn_table!`: a struct of C function pointers resolved from a library at load, all or nothing.

/// Declares a function table: a struct with one C function pointer per exported symbol.
///
/// Each entry names the field, the exported symbol and the pointer type transcribed from the
/// header's prototype. `resolve` looks every symbol up and returns either a complete table or the
/// list of every symbol that is missing, so a table can never hold a dangling or null entry.
/// `SYMBOLS` lists the names in table order. The table implements [`FnTable`], which
/// [`Runtime`](crate::Runtime) loads.
///
/// ```
/// dynload::fn_table! {
///     /// The part of libc used here.
///     pub struct LibcFns {
///         /// `strlen(3)`.
///         strlen = "strlen": unsafe extern "C" fn(s: *const core::ffi::c_char) -> usize;
///     }
/// }
///
/// assert_eq!(LibcFns::SYMBOLS, ["strlen"]);
/// ```
#[macro_export]
macro_rules! fn_table {
    (
        $(#[doc = $table_doc:literal])*
        pub struct $table:ident {
            $(
                $(#[doc = $doc:literal])*
                $field:ident = $symbol:literal: unsafe extern "C" fn($($arg:ident: $arg_ty:ty),* $(,)?) $(-> $ret:ty)?;
            )*
        }
    ) => {
        $(#[doc = $table_doc])*
        // Not `Copy`: a copy of the table would invite outliving the library that owns it.
        #[derive(Debug)]
        pub struct $table {
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!("Symbol `", $symbol, "`.")]
                pub $field: unsafe extern "C" fn($($arg: $arg_ty),*) $(-> $ret)?,
            )*
        }

        impl $table {
            /// Every symbol of the table, in table order.
            pub const SYMBOLS: &'static [&'static str] = &[$($symbol),*];
        }

        impl $crate::FnTable for $table {
            unsafe fn resolve(library: &$crate::Library) -> Result<Self, Vec<&'static str>> {
                let mut missing = Vec::new();
                $(
                    // SAFETY: the caller guarantees the symbol, if present, has this signature
                    // (transcribed from the header prototype); the name is NUL-terminated.
                    let $field = unsafe {
                        library.get::<unsafe extern "C" fn($($arg_ty),*) $(-> $ret)?>(concat!($symbol, "\0").as_bytes())
                    };
                    let $field = match $field {
                        Ok(symbol) => Some(*symbol),
                        Err(_) => {
                            missing.push($symbol);
                            None
                        }
                    };
                )*
                match ($($field,)*) {
                    ($(Some($field),)*) => Ok(Self { $($field),* }),
                    _ => Err(missing),
                }
            }

            fn probe_address(&self) -> Option<*const core::ffi::c_void> {
                let addresses: &[*const core::ffi::c_void] = &[$(self.$field as *const core::ffi::c_void),*];
                addresses.first().copied()
            }
        }
    };
}

/// A function table resolved from a library all at once; [`fn_table!`] implements it.
pub trait FnTable: Sized {
    /// Resolves every symbol of the table in `library`; on failure, lists every missing symbol
    /// in table order.
    ///
    /// # Safety
    ///
    /// `library` must be a build of the runtime the table's prototypes were transcribed from (or
    /// an ABI-compatible one): each symbol it exports under a table name must be a function with
    /// the table's signature. The returned pointers are valid only while `library` stays loaded.
    unsafe fn resolve(library: &crate::Library) -> Result<Self, Vec<&'static str>>;

    /// The address of the table's first entry, for `dladdr` to name the file the library was
    /// mapped from; `None` for an empty table.
    fn probe_address(&self) -> Option<*const core::ffi::c_void>;
}
