//! `c_enums!`: C enums as transparent newtypes, one associated constant per enumerator.

/// Declares C enums as transparent newtypes, one associated constant per enumerator.
///
/// A newtype rather than a Rust `enum` because the library may hand back a value the bindings do
/// not know (a newer release); reading it into a Rust `enum` would be undefined behaviour. Each
/// type gets `ALL` (value, C name and description of every enumerator), `name()`,
/// `description()` and a `Debug` that prints the C name.
///
/// One invocation declares every enum of the crate and also emits a `pub(crate)` function
/// `enum_layout_entries(&mut Vec<LayoutEntry>)`, which lists each type's `sizeof` and each
/// enumerator's value for the C cross-check, so an enum cannot be added without being checked.
///
/// ```
/// dynload::c_enums! {
///     /// A status.
///     pub struct Status(u32) = "status_t" {
///         OK = 0, "STATUS_OK", "Success.";
///         FAILED = 1, "STATUS_FAILED", "";
///     }
/// }
///
/// assert_eq!(Status::OK.name(), Some("STATUS_OK"));
/// assert_eq!(Status::FAILED.description(), None);
/// assert_eq!(format!("{:?}", Status(7)), "Status(0x7)");
/// let mut entries = Vec::new();
/// enum_layout_entries(&mut entries);
/// assert_eq!(entries[0], dynload::LayoutEntry::size("sizeof(status_t)", 4));
/// ```
#[macro_export]
macro_rules! c_enums {
    ($(
        $(#[doc = $doc:literal])*
        pub struct $name:ident($repr:ty) = $c_type:literal {
            $($konst:ident = $value:literal, $c_name:literal, $desc:literal;)*
        }
    )*) => {
        $(
            $(#[doc = $doc])*
            #[doc = ""]
            #[doc = concat!("C type: `", $c_type, "`.")]
            #[repr(transparent)]
            #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub struct $name(pub $repr);

            impl $name {
                $(
                    #[doc = concat!("`", $c_name, "`. ", $desc)]
                    pub const $konst: Self = Self($value);
                )*

                /// Every enumerator the header declares, in header order: value, C name and the
                /// header's description (empty where the header has none). Aliases share a value;
                /// the first one listed is the current name.
                pub const ALL: &'static [(Self, &'static str, &'static str)] =
                    &[$((Self::$konst, $c_name, $desc)),*];

                /// The official C name of this value, or `None` for a value the header does not
                /// declare.
                #[must_use]
                pub fn name(self) -> Option<&'static str> {
                    Self::ALL.iter().find(|(value, _, _)| *value == self).map(|(_, name, _)| *name)
                }

                /// The header's description of this value, or `None` for a value the header does
                /// not declare or does not describe.
                #[must_use]
                pub fn description(self) -> Option<&'static str> {
                    Self::ALL
                        .iter()
                        .find(|(value, _, _)| *value == self)
                        .map(|(_, _, description)| *description)
                        .filter(|description| !description.is_empty())
                }
            }

            impl core::fmt::Debug for $name {
                fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                    match self.name() {
                        Some(name) => write!(f, "{}({name})", stringify!($name)),
                        None => write!(f, "{}({:#x})", stringify!($name), self.0),
                    }
                }
            }
        )*

        /// `sizeof` of every enum type and the value of every enumerator.
        pub(crate) fn enum_layout_entries(out: &mut Vec<$crate::LayoutEntry>) {
            $(
                out.push($crate::LayoutEntry::size(
                    concat!("sizeof(", $c_type, ")"),
                    core::mem::size_of::<$name>(),
                ));
                $(out.push($crate::LayoutEntry::value($c_name, i128::from($name::$konst.0)));)*
            )*
        }
    };
}
