//! Admission: which (architecture, device kind, model) combinations arm the retained route by
//! default (`docs/ARCHITECTURE.md`, "The replay controller").
//!
//! The admissions registry (`registry/admissions.json`) holds evidence-bound rows. Each row names
//! one exact architecture, one device kind, one model format (container, model architecture and
//! the exact set of tensor types) with the model file's SHA-256, the longest context, the KV-cache
//! layout and the transport its evidence covers, and the sealed fixture
//! (`registry/fixtures.json`) that is its evidence. Nothing is inferred: a wildcard, an empty
//! field or an unknown fixture id is a parse error, and a combination without its own row is not
//! admitted. The runtime default predicate ([`AdmissionRegistry::decide`]) admits exactly one
//! device (as the device's topology reports it) whose architecture, kind and model match a row,
//! with a context no longer than the row's, the row's KV layout and its transport, and whose
//! fixture's sealing bench promoted the retained route under its declared rule
//! ([`AdmissionRegistry::with_promotions`]); anything else fails closed to the ordinary path with
//! the reason recorded in the [`AdmissionDecision`].
//!
//! # File format
//! ```json
//! {"admissions": [{"arch": "gfx1100", "device_kind": "sim",
//!   "model_format": {"container": "gguf", "architecture": "llama", "tensor_types": ["F32", "Q4_1", "Q8_0"]},
//!   "model_sha256": "<64 hex digits>", "max_context": 1024,
//!   "kv_layout": "f32:layer,position,kv_head,head_dim", "transport": "pm4",
//!   "fixture": "smollm2-135m-gfx1100-sim"}]}
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use lowering::plan::Transport;
use pm4_encoding::Target;
use serde::Serialize;
use serde_json::Value;

/// Device kinds a row may name.
pub const DEVICE_KINDS: [&str; 2] = ["sim", "hsa"];

/// Why an admissions registry was refused. Every variant names the row (0-based) and field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// The file is not JSON or not an object with an `admissions` array.
    #[error("admissions registry: {detail}")]
    Format {
        /// What is wrong.
        detail: String,
    },
    /// A field is missing, empty or of the wrong type.
    #[error("admissions row {row}: field {field:?}: {detail}")]
    Field {
        /// Row index.
        row: usize,
        /// The field.
        field: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// A field holds a wildcard or a pattern instead of one exact value.
    #[error("admissions row {row}: field {field:?}: {value:?} is a wildcard; rows name exact values")]
    Wildcard {
        /// Row index.
        row: usize,
        /// The field.
        field: &'static str,
        /// The value given.
        value: String,
    },
    /// The evidence fixture is not in the fixture registry.
    #[error("admissions row {row}: field \"fixture\": {fixture:?} is not a sealed fixture")]
    UnknownFixture {
        /// Row index.
        row: usize,
        /// The fixture id given.
        fixture: String,
    },
    /// Two rows name the same architecture, device kind and model.
    #[error("admissions row {row}: duplicates row {first}")]
    Duplicate {
        /// Row index.
        row: usize,
        /// The earlier row.
        first: usize,
    },
}

/// A model's format as admission compares it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModelFormat {
    /// The file container (`gguf`).
    pub container: String,
    /// The model architecture (`general.architecture`, e.g. `llama`).
    pub architecture: String,
    /// The exact set of ggml tensor type names the file uses.
    pub tensor_types: BTreeSet<String>,
}

impl ModelFormat {
    /// The format of a GGUF file. An unknown tensor type id is named `unknown(<id>)`, which no
    /// row can certify.
    #[must_use]
    pub fn of_gguf(file: &gguf::Gguf) -> Self {
        let architecture = file.str("general.architecture").unwrap_or("").to_owned();
        let tensor_types = file
            .tensors()
            .iter()
            .map(|t| t.ty().name().map_or_else(|| format!("unknown({})", t.ty().id()), str::to_owned))
            .collect();
        Self { container: "gguf".to_owned(), architecture, tensor_types }
    }
}

/// One evidence-bound admission.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AdmissionRow {
    /// Its index in the registry.
    pub index: usize,
    /// The exact architecture.
    #[serde(serialize_with = "serialize_target")]
    pub arch: Target,
    /// The device kind (`sim` or `hsa`).
    pub device_kind: String,
    /// The certified model format.
    pub model_format: ModelFormat,
    /// SHA-256 of the certified model file, lowercase hex.
    pub model_sha256: String,
    /// The longest KV-cache context (positions) the evidence covers.
    pub max_context: u32,
    /// The KV-cache layout scheme the evidence ran with
    /// ([`crate::model::KvCacheLayout::scheme`]).
    pub kv_layout: String,
    /// The transport the evidence's retained route used.
    pub transport: Transport,
    /// The sealed fixture that is this row's evidence.
    pub fixture: String,
}

/// What the runtime asks admission about.
#[derive(Clone, Debug)]
pub struct AdmissionQuery<'a> {
    /// The device's architecture.
    pub arch: Target,
    /// The device kind (`sim` or `hsa`).
    pub device_kind: &'a str,
    /// Devices the model would run on (the device's topology).
    pub devices: u32,
    /// The model's format.
    pub model_format: &'a ModelFormat,
    /// The model file's SHA-256, lowercase hex.
    pub model_sha256: &'a str,
    /// The KV-cache context (positions) the session would use.
    pub context: u32,
    /// The session's KV-cache layout scheme.
    pub kv_layout: &'a str,
    /// The transport the retained route would use.
    pub transport: Transport,
}

/// The admission predicate's answer, with its reason (reported in route status).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AdmissionDecision {
    /// Whether the retained route is armed by default.
    pub admitted: bool,
    /// Why, in words.
    pub reason: String,
    /// The row that admitted it.
    pub row: Option<AdmissionRow>,
}

impl AdmissionDecision {
    /// The decision when no registry was consulted: not admitted (an explicit backend request
    /// still arms the controller).
    #[must_use]
    pub fn not_evaluated() -> Self {
        Self { admitted: false, reason: "no admission decision was made for this model".to_owned(), row: None }
    }

    fn refused(reason: String) -> Self {
        Self { admitted: false, reason, row: None }
    }
}

/// A parsed admissions registry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AdmissionRegistry {
    /// The rows, in file order.
    pub rows: Vec<AdmissionRow>,
    /// The evidence fixtures that do not earn the retained route its default, with why
    /// ([`AdmissionRegistry::with_promotions`]): a row naming one admits nothing. Empty until
    /// the fixture registry is consulted.
    pub held: BTreeMap<String, String>,
}

impl AdmissionRegistry {
    /// Parses `text`. With `fixtures`, every row's fixture must be one of those ids.
    ///
    /// # Errors
    /// [`AdmissionError`] naming the row and field.
    pub fn parse(text: &str, fixtures: Option<&BTreeSet<String>>) -> Result<Self, AdmissionError> {
        let root: Value =
            serde_json::from_str(text).map_err(|e| AdmissionError::Format { detail: format!("not JSON: {e}") })?;
        let Some(items) = root.get("admissions").and_then(Value::as_array) else {
            return Err(AdmissionError::Format { detail: "expected an object with an \"admissions\" array".into() });
        };
        let mut rows: Vec<AdmissionRow> = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let row = parse_row(index, item)?;
            if let Some(known) = fixtures
                && !known.contains(&row.fixture)
            {
                return Err(AdmissionError::UnknownFixture { row: index, fixture: row.fixture });
            }
            if let Some(first) = rows
                .iter()
                .find(|r| r.arch == row.arch && r.device_kind == row.device_kind && r.model_sha256 == row.model_sha256)
            {
                return Err(AdmissionError::Duplicate { row: index, first: first.index });
            }
            rows.push(row);
        }
        Ok(Self { rows, held: BTreeMap::new() })
    }

    /// The registry with every row's evidence judged by the sealed fixtures of `fixtures`: a
    /// row whose fixture's sealing run did not promote the retained route under its declared
    /// rule (or declared none, or is not in `fixtures`) is held, and [`Self::decide`] refuses it
    /// with that reason (`registry/README.md`, "Admission needs a promotion").
    #[must_use]
    pub fn with_promotions(mut self, fixtures: &crate::golden::registry::Registry) -> Self {
        self.held = self
            .rows
            .iter()
            .filter_map(|row| {
                let why = match fixtures.get(&row.fixture) {
                    Some(fixture) => fixture.held()?,
                    None => "it is not a sealed fixture".to_owned(),
                };
                Some((row.fixture.clone(), why))
            })
            .collect();
        self
    }

    /// The architectures some row admits.
    #[must_use]
    pub fn architectures(&self) -> BTreeSet<Target> {
        self.rows.iter().map(|r| r.arch).collect()
    }

    /// The runtime default predicate: exactly one device, an architecture on the allow-list,
    /// and a row for that architecture and device kind certifying this exact model.
    #[must_use]
    pub fn decide(&self, query: &AdmissionQuery<'_>) -> AdmissionDecision {
        if query.devices != 1 {
            return AdmissionDecision::refused(format!(
                "{} devices: the retained route is admitted for exactly one device",
                query.devices
            ));
        }
        let arch = query.arch.name();
        let for_arch: Vec<&AdmissionRow> = self.rows.iter().filter(|r| r.arch == query.arch).collect();
        if for_arch.is_empty() {
            let allowed: Vec<&str> = self.architectures().into_iter().map(Target::name).collect();
            return AdmissionDecision::refused(format!(
                "architecture {arch} has no admission row (admitted: {})",
                if allowed.is_empty() { "none".to_owned() } else { allowed.join(", ") }
            ));
        }
        let for_kind: Vec<&&AdmissionRow> = for_arch.iter().filter(|r| r.device_kind == query.device_kind).collect();
        if for_kind.is_empty() {
            return AdmissionDecision::refused(format!(
                "device kind {:?} on {arch} has no admission row",
                query.device_kind
            ));
        }
        let matching =
            for_kind.iter().find(|r| r.model_sha256 == query.model_sha256 && &r.model_format == query.model_format);
        match matching {
            Some(row) if query.context > row.max_context => AdmissionDecision::refused(format!(
                "context {} exceeds the {} positions row {} (fixture {}) certifies",
                query.context, row.max_context, row.index, row.fixture
            )),
            Some(row) if query.kv_layout != row.kv_layout => AdmissionDecision::refused(format!(
                "KV layout {} is not the {} row {} (fixture {}) certifies",
                query.kv_layout, row.kv_layout, row.index, row.fixture
            )),
            Some(row) if query.transport != row.transport => AdmissionDecision::refused(format!(
                "transport {} is not the {} row {} (fixture {}) certifies",
                query.transport.name(),
                row.transport.name(),
                row.index,
                row.fixture
            )),
            Some(row) if self.held.contains_key(&row.fixture) => AdmissionDecision::refused(format!(
                "row {} (fixture {}) does not arm the retained route by default: {}",
                row.index, row.fixture, self.held[&row.fixture]
            )),
            Some(row) => AdmissionDecision {
                admitted: true,
                reason: format!(
                    "admitted by row {} (fixture {}: context up to {}, KV layout {}, transport {})",
                    row.index,
                    row.fixture,
                    row.max_context,
                    row.kv_layout,
                    row.transport.name()
                ),
                row: Some((**row).clone()),
            },
            None => AdmissionDecision::refused(format!(
                "model {} {} [{}] sha256 {} is not certified for {arch} {}",
                query.model_format.container,
                query.model_format.architecture,
                query.model_format.tensor_types.iter().cloned().collect::<Vec<_>>().join(", "),
                query.model_sha256,
                query.device_kind
            )),
        }
    }
}

fn serialize_target<S: serde::Serializer>(t: &Target, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(t.name())
}

/// Whether `value` is a pattern rather than one exact value.
fn is_wildcard(value: &str) -> bool {
    value.contains(['*', '?', '[', ']', '|'])
        || ["any", "all", "default", "*"].iter().any(|w| value.eq_ignore_ascii_case(w))
}

fn exact_str(row: usize, item: &Value, field: &'static str) -> Result<String, AdmissionError> {
    let value = item.get(field).ok_or_else(|| AdmissionError::Field { row, field, detail: "missing".into() })?;
    exact_value(row, field, value)
}

fn exact_value(row: usize, field: &'static str, value: &Value) -> Result<String, AdmissionError> {
    let Some(text) = value.as_str() else {
        return Err(AdmissionError::Field { row, field, detail: format!("expected a string, found {value}") });
    };
    if text.trim().is_empty() {
        return Err(AdmissionError::Field { row, field, detail: "empty".into() });
    }
    if is_wildcard(text) {
        return Err(AdmissionError::Wildcard { row, field, value: text.to_owned() });
    }
    Ok(text.to_owned())
}

fn parse_row(index: usize, item: &Value) -> Result<AdmissionRow, AdmissionError> {
    let field_err = |field: &'static str, detail: String| AdmissionError::Field { row: index, field, detail };
    if !item.is_object() {
        return Err(AdmissionError::Format { detail: format!("row {index} is not an object") });
    }
    let arch_text = exact_str(index, item, "arch")?;
    let arch = Target::from_str(&arch_text).map_err(|e| field_err("arch", e.to_string()))?;
    let device_kind = exact_str(index, item, "device_kind")?;
    if !DEVICE_KINDS.contains(&device_kind.as_str()) {
        return Err(field_err("device_kind", format!("{device_kind:?}: accepted values: {}", DEVICE_KINDS.join(", "))));
    }
    let model_sha256 = exact_str(index, item, "model_sha256")?;
    if model_sha256.len() != 64 || !model_sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(field_err("model_sha256", format!("{model_sha256:?} is not 64 lowercase hex digits")));
    }
    let fixture = exact_str(index, item, "fixture")?;
    let format = item.get("model_format").ok_or_else(|| field_err("model_format", "missing".into()))?;
    let model_format = parse_format(index, format)?;
    let max_context =
        match item.get("max_context") {
            None => return Err(field_err("max_context", "missing".into())),
            Some(v) => v.as_u64().and_then(|n| u32::try_from(n).ok()).filter(|&n| n >= 1).ok_or_else(|| {
                field_err("max_context", format!("expected a context of at least 1 position, found {v}"))
            })?,
        };
    let kv_layout = exact_str(index, item, "kv_layout")?;
    let transport_text = exact_str(index, item, "transport")?;
    let transport = match transport_text.as_str() {
        "pm4" => Transport::Pm4,
        "aql" => Transport::Aql,
        other => return Err(field_err("transport", format!("{other:?}: accepted values: pm4, aql"))),
    };
    Ok(AdmissionRow {
        index,
        arch,
        device_kind,
        model_format,
        model_sha256,
        max_context,
        kv_layout,
        transport,
        fixture,
    })
}

fn parse_format(row: usize, format: &Value) -> Result<ModelFormat, AdmissionError> {
    let container = exact_str(row, format, "container").map_err(|e| rename(e, "model_format.container"))?;
    let architecture = exact_str(row, format, "architecture").map_err(|e| rename(e, "model_format.architecture"))?;
    let field = "model_format.tensor_types";
    let Some(types) = format.get("tensor_types").and_then(Value::as_array) else {
        return Err(AdmissionError::Field { row, field, detail: "expected an array of tensor type names".into() });
    };
    if types.is_empty() {
        return Err(AdmissionError::Field { row, field, detail: "empty".into() });
    }
    let mut tensor_types = BTreeSet::new();
    for value in types {
        let name = exact_value(row, field, value)?;
        if !tensor_types.insert(name.clone()) {
            return Err(AdmissionError::Field { row, field, detail: format!("{name:?} is listed twice") });
        }
    }
    Ok(ModelFormat { container, architecture, tensor_types })
}

/// The same error with a dotted field name (a field of a nested object).
fn rename(error: AdmissionError, field: &'static str) -> AdmissionError {
    match error {
        AdmissionError::Field { row, detail, .. } => AdmissionError::Field { row, field, detail },
        AdmissionError::Wildcard { row, value, .. } => AdmissionError::Wildcard { row, field, value },
        other => other,
    }
}

pub mod load;
pub mod model;

#[cfg(test)]
mod tests;
