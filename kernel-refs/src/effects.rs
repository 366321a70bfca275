//! Declared effects resolved for one launch ([`kernels::resolve`]): the byte ranges a kernel
//! may touch, which the soft device lets a CPU reference touch and nothing else.

pub use kernels::resolve::*;
