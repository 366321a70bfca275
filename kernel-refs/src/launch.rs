//! One kernel launch as the device sees it: the kernarg bytes and the dispatch geometry, and
//! typed reads of its arguments at the offsets of the kernel's signature. Defined in
//! [`kernels::launch`], beside the effect declarations they resolve against.

pub use kernels::launch::*;
