//! What the `gemma3`, `lfm2` and `qwen35` adapters load the same way: a weight tensor uploaded
//! from the file (checked finite on the way), a kernel from the checked-in code object of its
//! module, and the kernel of each GGUF type for the four typed operations (the matvec, the
//! batched product, the row gather and the batched row gather).

use std::collections::BTreeMap;

use gguf::{GgmlType, Gguf};
use hal::Device;

use super::llama::LoadError;
use super::ops;
use super::params::ParamsError;
use crate::funnel::{Funnel, Kernel};
use crate::workload::WorkloadError;

/// The module of the GGML quant kernels beyond Q4_1 and Q8_0's.
const QUANTS_MODULE: &str = "ggml_quants";

/// One weight tensor on the device.
#[derive(Clone, Copy, Debug)]
pub(super) struct Weight {
    pub(super) va: u64,
    pub(super) bytes: u64,
    pub(super) ty: GgmlType,
}

impl Weight {
    pub(super) const fn tensor(self) -> ops::Tensor {
        ops::Tensor { va: self.va, bytes: self.bytes }
    }
}

/// Uploads tensor `name` of `file` to `device`, every element checked finite first.
///
/// # Errors
/// [`LoadError::Model`] for a tensor the file cannot give or a non-finite element (naming it),
/// [`LoadError::Workload`] for the device.
pub(super) fn upload(device: &mut dyn Device, file: &Gguf, name: &str) -> Result<Weight, LoadError> {
    let view = file.tensor(name).map_err(ParamsError::Metadata)?;
    view.check_finite().map_err(ParamsError::Weights)?;
    let bytes = view.bytes();
    let allocation = device.allocate(u64::try_from(bytes.len()).unwrap_or(u64::MAX))?;
    device.write(allocation.va, bytes)?;
    Ok(Weight { va: allocation.va, bytes: allocation.size, ty: view.ty() })
}

/// Kernel `name` of the checked-in code object of `module` for the device's target.
///
/// # Errors
/// [`WorkloadError::Init`] when the kernels crate has no such code object or kernel; the
/// device's load error.
pub(super) fn load_kernel(device: &mut dyn Device, module: &str, name: &str) -> Result<Kernel, WorkloadError> {
    let path = format!("{}/{module}.co", device.target());
    let artifact = kernels::artifact(&path)
        .ok_or_else(|| WorkloadError::Init(format!("no built code object {path} in the kernels crate")))?;
    let mut loaded = Kernel::load_all(device, artifact.bytes, &[name])?;
    loaded.pop().ok_or_else(|| WorkloadError::Init(format!("{path} returned no kernel {name}")))
}

/// An operation that has one kernel per GGUF type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Typed {
    /// `matvec_<type>`: the decode step's matrix-vector product.
    Matvec,
    /// `matmul_<type>`: a prefill pass's batched product.
    Matmul,
    /// `get_row_<type>`: the decode step's embedding row.
    GetRow,
    /// `get_rows_<type>`: a prefill pass's embedding rows.
    GetRows,
}

/// The module and kernel name of `kind` for type `ty`: Q4_1 and Q8_0 matrices and Q8_0
/// embeddings have the kernels of modules `quant` (decode) and `prefill` (batched) that the
/// llama step uses; every other type those of module `ggml_quants`.
pub(super) fn typed_kernel(kind: Typed, ty: GgmlType) -> (&'static str, String) {
    let (prefix, legacy) = match kind {
        Typed::Matvec => ("matvec", matches!(ty, GgmlType::Q4_1 | GgmlType::Q8_0)),
        Typed::Matmul => ("matmul", matches!(ty, GgmlType::Q4_1 | GgmlType::Q8_0)),
        Typed::GetRow => ("get_row", ty == GgmlType::Q8_0),
        Typed::GetRows => ("get_rows", ty == GgmlType::Q8_0),
    };
    let module = match (legacy, kind) {
        (false, _) => QUANTS_MODULE,
        (true, Typed::Matvec | Typed::GetRow) => "quant",
        (true, Typed::Matmul | Typed::GetRows) => "prefill",
    };
    (module, format!("{prefix}_{}", ty.to_string().to_ascii_lowercase()))
}

/// The kernel of `kind` for type `ty` ([`typed_kernel`], [`load_kernel`]).
///
/// # Errors
/// As [`load_kernel`].
pub(super) fn load_typed(device: &mut dyn Device, kind: Typed, ty: GgmlType) -> Result<Kernel, WorkloadError> {
    let (module, name) = typed_kernel(kind, ty);
    load_kernel(device, module, &name)
}

/// The kernels of one typed operation, by [`GgmlType::id`].
pub(super) type ByType = BTreeMap<u32, Kernel>;

/// `y = w · x` with the `matvec` kernel of `w`'s type.
///
/// # Errors
/// [`WorkloadError::Init`] when no kernel of that type was loaded; the launch's errors.
pub(super) fn matvec(
    device: &mut dyn Device,
    funnel: &mut Funnel,
    kernels: &ByType,
    (y, w, x): (u64, Weight, u64),
    (rows, cols): (u32, u32),
) -> Result<(), WorkloadError> {
    let kernel = kernels
        .get(&w.ty.id())
        .ok_or_else(|| WorkloadError::Init(format!("no matvec loaded for a {} matrix", w.ty)))?;
    ops::matvec(device, funnel, kernel, (y, w.tensor(), x), (rows, cols))
}

/// `y[t] = w · x[t]` for the `n` rows of a prefill pass with the `matmul` kernel of `w`'s type,
/// each row the bits [`matvec`] gives.
///
/// # Errors
/// [`WorkloadError::Init`] when no kernel of that type was loaded; the launch's errors.
pub(super) fn matmul(
    device: &mut dyn Device,
    funnel: &mut Funnel,
    kernels: &ByType,
    (y, w, x): (u64, Weight, u64),
    (rows, cols, n): (u32, u32, u32),
) -> Result<(), WorkloadError> {
    let kernel = kernels
        .get(&w.ty.id())
        .ok_or_else(|| WorkloadError::Init(format!("no batched product loaded for a {} matrix", w.ty)))?;
    ops::matmul(device, funnel, kernel, (y, w.tensor(), x), (rows, cols, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_types_keep_the_llama_kernels() {
        let k = |kind, ty| typed_kernel(kind, ty);
        assert_eq!(k(Typed::Matvec, GgmlType::Q4_1), ("quant", "matvec_q4_1".to_owned()));
        assert_eq!(k(Typed::Matmul, GgmlType::Q8_0), ("prefill", "matmul_q8_0".to_owned()));
        assert_eq!(k(Typed::GetRow, GgmlType::Q8_0), ("quant", "get_row_q8_0".to_owned()));
        assert_eq!(k(Typed::GetRows, GgmlType::Q8_0), ("prefill", "get_rows_q8_0".to_owned()));
        // Q4_1 rows are gathered by ggml_quants (quant has no get_row_q4_1).
        assert_eq!(k(Typed::GetRow, GgmlType::Q4_1), ("ggml_quants", "get_row_q4_1".to_owned()));
        assert_eq!(k(Typed::Matvec, GgmlType::Q6K), ("ggml_quants", "matvec_q6_k".to_owned()));
        assert_eq!(k(Typed::GetRows, GgmlType::Bf16), ("ggml_quants", "get_rows_bf16".to_owned()));
    }
}
