//! The sealed-fixture registry (`registry/fixtures.json`): one row per fixture, written by
//! `redline golden --seal` from a real run, never by hand.

use serde::{Deserialize, Serialize};

use crate::bench::params::{Order, Params, Process};
use crate::bench::promotion::PromotionRule;
use crate::stationarity::{GateSettings, GateSettingsError};

/// Why a fixture registry's text is not a registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Not JSON of the registry's shape (serde_json names the line and column).
    #[error("fixture registry")]
    Json(#[source] serde_json::Error),
    /// A fixture without an id.
    #[error("fixture {index}: field id: empty")]
    EmptyId {
        /// Its place in the list.
        index: usize,
    },
    /// Two fixtures with one id.
    #[error("fixture {id}: field id: duplicate")]
    DuplicateId {
        /// The id.
        id: String,
    },
    /// An architecture that is not a target.
    #[error("fixture {id}: field arch: {error}")]
    Arch {
        /// The fixture.
        id: String,
        /// Why.
        error: pm4_encoding::UnknownTarget,
    },
    /// A promotion disposition other than `promote` or `hold`.
    #[error("fixture {id}: field sealed.promotion.disposition: {found:?} is not promote or hold")]
    Disposition {
        /// The fixture.
        id: String,
        /// The value.
        found: String,
    },
    /// Gate settings the gate refuses.
    #[error("fixture {id}: field bench.gate")]
    Gate {
        /// The fixture.
        id: String,
        /// Why.
        source: GateSettingsError,
    },
}

/// The file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registry {
    /// How rows are made and checked.
    #[serde(default)]
    pub about: String,
    /// The fixtures.
    pub fixtures: Vec<Fixture>,
}

/// The model a fixture runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureModel {
    /// The catalogue alias.
    pub alias: String,
    /// SHA-256 of the GGUF file.
    pub sha256: String,
}

/// The bench parameters a fixture is sealed with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureBench {
    /// The prompt text.
    pub prompt: String,
    /// Decode tokens per row.
    pub tokens: u32,
    /// KV-cache positions.
    pub context: u32,
    /// The retained arm's transport.
    pub transport: String,
    /// The retained arm's backend.
    pub retained_backend: String,
    /// Sampler temperature.
    pub temperature: f32,
    /// Sampler seed.
    pub seed: u64,
    /// Warm-up rows per arm.
    pub warmup: usize,
    /// Timed rows per arm.
    pub runs: usize,
    /// Row order.
    pub order: Order,
    /// Process mode.
    pub process: Process,
    /// Stationarity gate.
    pub gate: GateSettings,
}

/// The tape identity a fixture must reproduce.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureTape {
    /// Launches on the tape.
    pub dispatch_count: u64,
    /// Distinct kernels.
    pub unique_kernels: u64,
    /// Launches kept outside the tape.
    pub external_launches: u64,
    /// Ordered sequence hash, hex.
    pub sequence_hash: String,
}

/// The submission identity a fixture must reproduce (the queue id, an allocation number, is
/// not part of it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureSubmission {
    /// `pm4` or `aql`.
    pub transport: String,
    /// Dispatches per token.
    pub dispatches: u64,
    /// AQL packets per token.
    pub packets: u64,
    /// Queues used.
    pub queues: u64,
    /// Wait-free phases.
    pub phases: u64,
    /// PM4 dwords.
    pub pm4_dwords: u64,
}

/// Acceptance floors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Floors {
    /// Lowest acceptable median tok/s of the retained arm.
    pub min_retained_tok_s: f64,
    /// Lowest acceptable retained/ordinary median tok/s ratio.
    pub min_ratio: f64,
    /// How the floors were chosen.
    pub note: String,
}

/// What the sealing run measured (for the record; not compared).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sealed {
    /// When.
    pub utc: String,
    /// The source commit.
    pub commit: String,
    /// Median retained tok/s.
    pub retained_tok_s: f64,
    /// Median ordinary tok/s.
    pub ordinary_tok_s: f64,
    /// Their ratio.
    pub ratio: f64,
    /// The promotion rule the sealing run declared before its timed rows, and its disposition;
    /// absent in a row sealed without one. Only a `promote` disposition lets an admission row
    /// naming this fixture arm the retained route by default (`registry/README.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promotion: Option<SealedPromotion>,
}

/// A sealing run's promotion rule and what it decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealedPromotion {
    /// The rule as declared (`ratio>=1.0,gates=pass,health=pass`).
    pub rule: String,
    /// `promote` or `hold`.
    pub disposition: String,
    /// Why: every clause held, or the clauses that failed with what was measured.
    pub reason: String,
}

impl Fixture {
    /// Why this fixture does not earn the retained route its default, or `None` when its
    /// sealing run promoted it.
    #[must_use]
    pub fn held(&self) -> Option<String> {
        match &self.sealed.promotion {
            None => Some("it was sealed without a promotion rule".to_owned()),
            Some(p) if p.disposition == "promote" => None,
            Some(p) => Some(format!("its sealing bench held the route under the rule {}: {}", p.rule, p.reason)),
        }
    }
}

/// One sealed fixture.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixture {
    /// `<model>-<arch>-<device kind>`.
    pub id: String,
    /// The model.
    pub model: FixtureModel,
    /// Architecture.
    pub arch: String,
    /// Device kind.
    pub device_kind: String,
    /// Bench parameters.
    pub bench: FixtureBench,
    /// Tape identity.
    pub tape: FixtureTape,
    /// Submission identity.
    pub submission: FixtureSubmission,
    /// Acceptance floors.
    pub floors: Floors,
    /// The sealing run.
    pub sealed: Sealed,
}

impl Registry {
    /// Parses and checks a registry.
    ///
    /// # Errors
    /// JSON errors with line and column; duplicate or empty ids and unusable fields naming the
    /// fixture and field.
    pub fn parse(text: &str) -> Result<Self, RegistryError> {
        let registry: Self = serde_json::from_str(text).map_err(RegistryError::Json)?;
        for (index, f) in registry.fixtures.iter().enumerate() {
            if f.id.trim().is_empty() {
                return Err(RegistryError::EmptyId { index });
            }
            if registry.fixtures[..index].iter().any(|g| g.id == f.id) {
                return Err(RegistryError::DuplicateId { id: f.id.clone() });
            }
            f.arch.parse::<pm4_encoding::Target>().map_err(|error| RegistryError::Arch { id: f.id.clone(), error })?;
            f.bench.gate.validate().map_err(|source| RegistryError::Gate { id: f.id.clone(), source })?;
            if let Some(p) = &f.sealed.promotion
                && !["promote", "hold"].contains(&p.disposition.as_str())
            {
                return Err(RegistryError::Disposition { id: f.id.clone(), found: p.disposition.clone() });
            }
        }
        Ok(registry)
    }

    /// The fixture named `id`.
    #[must_use]
    pub fn get(&self, id: &str) -> Option<&Fixture> {
        self.fixtures.iter().find(|f| f.id == id)
    }
}

impl FixtureBench {
    /// The bench parameters (model, device and architecture from the caller).
    #[must_use]
    pub fn params(&self, model: &str, device: &str, arch: &str) -> Params {
        Params {
            model: model.to_owned(),
            device: device.to_owned(),
            arch: arch.to_owned(),
            prompt: Some(self.prompt.clone()),
            tokens: self.tokens,
            context: self.context,
            transport: self.transport.clone(),
            retained_backend: self.retained_backend.clone(),
            temperature: self.temperature,
            seed: self.seed,
            warmup: self.warmup,
            runs: self.runs,
            order: self.order,
            process: self.process,
            gate: self.gate,
            promotion_rule: PromotionRule::default(),
            inject_fault: None,
        }
    }

    /// The fixture parameters of bench parameters.
    #[must_use]
    pub fn of(params: &Params) -> Self {
        Self {
            prompt: params.prompt_text().to_owned(),
            tokens: params.tokens,
            context: params.context,
            transport: params.transport.clone(),
            retained_backend: params.retained_backend.clone(),
            temperature: params.temperature,
            seed: params.seed,
            warmup: params.warmup,
            runs: params.runs,
            order: params.order,
            process: params.process,
            gate: params.gate(),
        }
    }
}
