//! What a bench runs: the model, the device, the workload and every setting of the arms, the
//! gate and the promotion rule. The command line's flags fill it; a sealed fixture's row does
//! too (`crate::golden`).

use crate::stationarity::GateSettings;

use super::promotion::PromotionRule;

/// The prompt rows are generated from when none is given.
pub const DEFAULT_PROMPT: &str = "The history of the printing press begins in";

/// How the arms' timed rows alternate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Every `hip` row, then every `auto` row.
    Ab,
    /// hip, auto, auto, hip, ...
    Abba,
    /// hip, auto, hip, auto, ...
    Interleaved,
}

impl Order {
    /// The arm (0 = hip, 1 = auto) of each timed row, `runs` rows per arm.
    #[must_use]
    pub fn schedule(self, runs: usize) -> Vec<usize> {
        match self {
            Order::Ab => std::iter::repeat_n(0, runs).chain(std::iter::repeat_n(1, runs)).collect(),
            Order::Abba => (0..runs).flat_map(|i| if i % 2 == 0 { [0, 1] } else { [1, 0] }).collect(),
            Order::Interleaved => (0..runs).flat_map(|_| [0, 1]).collect(),
        }
    }
}

/// Where each arm's session lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Process {
    /// One process, one session per arm kept loaded.
    Resident,
    /// Each arm in a newly spawned `redline bench-worker` process.
    Fresh,
}

/// The bench's parameters (shared with `redline golden`).
#[derive(Clone, Debug)]
pub struct Params {
    /// A model alias or a path to a `.gguf` file.
    pub model: String,
    /// The `--device` value (`auto`, `sim`, `hsa`).
    pub device: String,
    /// The soft device's architecture.
    pub arch: String,
    /// The prompt text (`None`: [`DEFAULT_PROMPT`]).
    pub prompt: Option<String>,
    /// Decode tokens per row.
    pub tokens: u32,
    /// KV-cache positions.
    pub context: u32,
    /// The retained arm's transport: `pm4` or `aql`.
    pub transport: String,
    /// The retained arm's backend: `auto`, or `shadow` (shadow-validated first).
    pub retained_backend: String,
    /// Sampler temperature (0 is greedy).
    pub temperature: f32,
    /// Sampler seed.
    pub seed: u64,
    /// Warm-up rows per arm.
    pub warmup: usize,
    /// Timed rows per arm.
    pub runs: usize,
    /// How the arms' timed rows alternate.
    pub order: Order,
    /// `resident` (one process) or `fresh` (a worker process per arm).
    pub process: Process,
    /// The stationarity gate.
    pub gate: GateSettings,
    /// The promotion rule, declared before the timed rows.
    pub promotion_rule: PromotionRule,
    /// Testing only: a soft-device fault armed on the retained arm before its first timed row
    /// (`replay-timeout`, `queue-fault`).
    pub inject_fault: Option<String>,
}

impl Params {
    /// The gate settings.
    #[must_use]
    pub fn gate(&self) -> GateSettings {
        self.gate
    }

    /// The prompt text.
    #[must_use]
    pub fn prompt_text(&self) -> &str {
        self.prompt.as_deref().unwrap_or(DEFAULT_PROMPT)
    }
}

#[cfg(test)]
mod tests {
    use super::Order;

    #[test]
    fn schedules_alternate_the_arms_as_named() {
        assert_eq!(Order::Ab.schedule(3), [0, 0, 0, 1, 1, 1]);
        assert_eq!(Order::Abba.schedule(4), [0, 1, 1, 0, 0, 1, 1, 0]);
        assert_eq!(Order::Interleaved.schedule(3), [0, 1, 0, 1, 0, 1]);
        for order in [Order::Ab, Order::Abba, Order::Interleaved] {
            let s = order.schedule(5);
            assert_eq!(s.iter().filter(|&&a| a == 1).count(), 5, "{order:?}");
        }
    }
}
