//! Text generation on a device: tokenizer from the GGUF, prefill in batched passes of ordinary
//! launches (or step by step), decode as continuations through the [`ReplayController`] (which decides each one's eligibility),
//! sampling and stops.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use gguf::Gguf;
use tokenizer::{
    Decoder, LogitsConfig, LogitsProcessor, Sampler, SamplerConfig, SpmVocab, StopMatcher, TokenLogprobs, Tokenizer,
    TokenizerError, TokenizerModel, Vocab,
};

use super::language::{self, LanguageModel};
use super::prefix::Held;
use super::{LoadError, ParamsError};
use crate::admission::AdmissionDecision;
use crate::funnel::Funnel;
use crate::replay::{ForwardError, ReplayConfig, ReplayController, RouteProof, Step};
use crate::workload::WorkloadError;
use hal::Device;

/// Launches a step may record: a decode step of a 30-layer model is about 450.
const FUNNEL_CAPACITY: usize = 8192;

/// Why generation could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The tokenizer metadata is missing or invalid.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The model file is not a llama model this adapter can run, or holds invalid values
    /// (hyperparameters, tensor shapes, the vocabulary size, non-finite weights).
    // Neither this nor `Load` is a `source`: the message holds it already, and a chain printed
    // whole would say it twice.
    #[error("loading the model: {0}")]
    Model(ParamsError),
    /// Loading the model onto the device.
    #[error("loading the model: {0}")]
    Load(WorkloadError),
    /// A forward failed.
    #[error(transparent)]
    Forward(#[from] ForwardError),
    /// The sampler's settings or the logits were invalid.
    #[error("sampling: {0}")]
    Sampler(String),
    /// The prompt and the tokens asked for do not fit the context.
    #[error("{prompt} prompt tokens + {max_tokens} new tokens exceed the context of {context}")]
    Context {
        /// Prompt tokens.
        prompt: usize,
        /// Tokens asked for.
        max_tokens: u32,
        /// Positions the KV cache holds.
        context: u32,
    },
    /// An empty prompt (the model needs one token to continue from).
    #[error("the prompt encodes to no tokens")]
    EmptyPrompt,
}

impl SessionError {
    /// Whether the error is a fault of the model file (its tokenizer metadata, hyperparameters,
    /// tensors or weights), as opposed to the device, the request or a forward.
    #[must_use]
    pub const fn is_invalid_input(&self) -> bool {
        matches!(self, Self::Tokenizer(_) | Self::Model(_))
    }
}

/// The tokenizer the GGUF's metadata describes.
///
/// # Errors
/// [`SessionError::Tokenizer`] naming the key and the vocabulary problem. An optional key
/// (`tokenizer.ggml.unknown_token_id`, `tokenizer.ggml.padding_token_id`, `tokenizer.ggml.pre`)
/// may be absent, but not present with another type.
pub fn tokenizer_from_gguf(file: &Gguf) -> Result<Tokenizer, SessionError> {
    let err = |e: &dyn std::fmt::Display| SessionError::Tokenizer(e.to_string());
    let model = file.str("tokenizer.ggml.model").map_err(|e| err(&e))?;
    let strings = |key: &str| -> Result<Vec<String>, SessionError> {
        Ok(file.string_array(key).map_err(|e| err(&e))?.into_iter().map(str::to_owned).collect())
    };
    let optional = |key: &str| file.get(key).map(|_| file.u32(key).map_err(|e| err(&e))).transpose();
    let flag = |key: &str| file.get(key).map(|_| file.bool(key).map_err(|e| err(&e))).transpose();
    match TokenizerModel::from_gguf_name(model) {
        Some(TokenizerModel::Bpe) => {}
        Some(TokenizerModel::Spm) => {
            let tokens = strings(TOKENS)?;
            // llama.cpp's reading: no scores means 0 for every piece, no types all normal.
            let scores = match file.get(SCORES) {
                Some(_) => file.f32_array(SCORES).map_err(|e| err(&e))?,
                None => vec![0.0; tokens.len()],
            };
            let token_types = match file.get(TOKEN_TYPES) {
                Some(_) => file.i32_array(TOKEN_TYPES).map_err(|e| err(&e))?,
                None => vec![1; tokens.len()],
            };
            let vocab = SpmVocab {
                tokens,
                scores,
                token_types,
                bos: optional(BOS)?,
                eos: optional(EOS)?,
                unk: optional(UNK)?,
                pad: optional(PAD)?,
                add_bos: flag(ADD_BOS)?,
                add_eos: flag(ADD_EOS)?,
                add_space_prefix: flag(ADD_SPACE_PREFIX)?,
            };
            return Tokenizer::new_spm(vocab).map_err(|e| SessionError::Tokenizer(format!("{}: {e}", e.key())));
        }
        None => {
            return Err(SessionError::Tokenizer(format!(
                "tokenizer.ggml.model {model:?}: only \"gpt2\" (byte-level BPE) and \"llama\" (SentencePiece-style) are supported"
            )));
        }
    }
    let vocab = Vocab {
        tokens: strings(TOKENS)?,
        token_types: file.i32_array(TOKEN_TYPES).map_err(|e| err(&e))?,
        merges: strings(MERGES)?,
        bos: file.u32(BOS).map_err(|e| err(&e))?,
        eos: file.u32(EOS).map_err(|e| err(&e))?,
        unk: optional(UNK)?,
        pad: optional(PAD)?,
    };
    let pre = match file.get(PRE) {
        Some(_) => file.str(PRE).map_err(|e| err(&e))?,
        None => "default",
    };
    // The pre-tokenizer's name sets llama.cpp's default for BOS and EOS (lfm2 adds BOS); a
    // present add_bos_token / add_eos_token key overrides it, as llama.cpp lets it.
    let (add_bos, add_eos) = (flag(ADD_BOS)?, flag(ADD_EOS)?);
    Tokenizer::new(vocab, pre)
        .map(|t| t.with_add_special(add_bos, add_eos))
        .map_err(|e| SessionError::Tokenizer(format!("{}: {e}", tokenizer_key(&e))))
}

const TOKENS: &str = "tokenizer.ggml.tokens";
const TOKEN_TYPES: &str = "tokenizer.ggml.token_type";
const MERGES: &str = "tokenizer.ggml.merges";
const SCORES: &str = "tokenizer.ggml.scores";
const ADD_BOS: &str = "tokenizer.ggml.add_bos_token";
const ADD_EOS: &str = "tokenizer.ggml.add_eos_token";
const ADD_SPACE_PREFIX: &str = "tokenizer.ggml.add_space_prefix";
const BOS: &str = "tokenizer.ggml.bos_token_id";
const EOS: &str = "tokenizer.ggml.eos_token_id";
const UNK: &str = "tokenizer.ggml.unknown_token_id";
const PAD: &str = "tokenizer.ggml.padding_token_id";
const PRE: &str = "tokenizer.ggml.pre";

/// The metadata key a vocabulary error is about.
fn tokenizer_key(error: &TokenizerError) -> &'static str {
    match error {
        TokenizerError::UnknownPreTokenizer { .. } => PRE,
        TokenizerError::TypeCountMismatch { .. } | TokenizerError::UnsupportedTokenType { .. } => TOKEN_TYPES,
        TokenizerError::VocabSize { .. }
        | TokenizerError::EmptyToken { .. }
        | TokenizerError::DuplicateToken { .. }
        | TokenizerError::NotByteLevel { .. }
        | TokenizerError::IdOutOfRange { .. } => TOKENS,
        TokenizerError::MalformedMerge { .. }
        | TokenizerError::MergeTokenMissing { .. }
        | TokenizerError::DuplicateMerge { .. } => MERGES,
        TokenizerError::SpecialIdOutOfRange { name, .. } => match *name {
            "bos" => BOS,
            "eos" => EOS,
            "unk" => UNK,
            _ => PAD,
        },
    }
}

/// What one generation asks for.
#[derive(Clone, Debug)]
pub struct GenerateOptions {
    /// New tokens at most.
    pub max_tokens: u32,
    /// Sampler settings.
    pub sampler: SamplerConfig,
    /// Stop strings (not emitted).
    pub stop: Vec<String>,
    /// Penalties and logit bias applied to the logits before sampling.
    pub logits: LogitsConfig,
    /// Report each sampled token's log-probability and this many most likely alternatives (at
    /// most [`tokenizer::TOP_LOGPROBS_MAX`]) through [`Output::logprobs`]; `None` computes none.
    pub top_logprobs: Option<usize>,
}

/// One call of [`Session::generate_with`]'s callback.
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    /// Text that became safe to show: empty during the prefill and while a possible stop string
    /// or an incomplete UTF-8 character is held back.
    pub text: &'a str,
    /// The token just sampled; `None` during the prefill and for the held-back rest at the end.
    pub token: Option<u32>,
    /// That token's log-probabilities, when [`GenerateOptions::top_logprobs`] asked for them:
    /// the log-softmax of the logits the sampler saw (after the penalties and the logit bias,
    /// before temperature, top-k and top-p).
    pub logprobs: Option<&'a TokenLogprobs>,
    /// The session's tokenizer, to name the tokens.
    pub tokenizer: &'a Tokenizer,
}

/// What one generation produced.
#[derive(Clone, Debug)]
pub struct Generation {
    /// The generated text (stop string excluded).
    pub text: String,
    /// The generated token ids.
    pub tokens: Vec<u32>,
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Of the prompt tokens, those whose KV rows (and sequence state) an earlier generation
    /// left on the device and this one kept instead of prefilling them
    /// ([`Session::set_prefix_reuse`]); 0 without reuse.
    pub cached_tokens: usize,
    /// Wall time of the decode steps, each from its forward to its logits read back (prefill
    /// excluded).
    pub decode_time: Duration,
    /// Decode forwards timed in `decode_time`.
    pub decode_forwards: u32,
    /// Wall time from the start of the prefill to the first token's logits read back: the time
    /// to first token inside the engine (a server's queue wait not included).
    pub prefill_time: Duration,
    /// Why generation ended: `stop` (end of sequence or a stop string), `length` (`max_tokens`
    /// reached) or `cancelled` (`on_text` asked to stop).
    pub finish_reason: &'static str,
}

impl Generation {
    /// Prompt tokens prefilled per second (the reused ones not counted; 0 when the prefill was
    /// cancelled before its end).
    #[must_use]
    pub fn prefill_tokens_per_second(&self) -> f64 {
        let seconds = self.prefill_time.as_secs_f64();
        let prefilled = self.prompt_tokens.saturating_sub(self.cached_tokens);
        if seconds > 0.0 { f64::from(u32::try_from(prefilled).unwrap_or(u32::MAX)) / seconds } else { 0.0 }
    }

    /// Decode tokens per second.
    #[must_use]
    pub fn tokens_per_second(&self) -> f64 {
        let seconds = self.decode_time.as_secs_f64();
        if seconds > 0.0 { f64::from(self.decode_forwards) / seconds } else { 0.0 }
    }
}

/// A model on a device with its tokenizer and replay controller.
#[derive(Debug)]
pub struct Session<D: Device> {
    device: D,
    model: Box<dyn LanguageModel>,
    funnel: Funnel,
    controller: ReplayController,
    tokenizer: Tokenizer,
    admission: AdmissionDecision,
    /// Prompt tokens per prefill pass; 1 runs the prompt step by step.
    prefill_chunk: u32,
    /// Whether a generation keeps the prefix of its prompt the device already holds.
    prefix_reuse: bool,
    /// The tokens whose sequence the device holds.
    held: Held,
}

impl<D: Device> Session<D> {
    /// Loads `file` onto `device` with a KV cache of `context` positions; the controller is
    /// configured from `config` with no admission decision, so it is armed only when the backend
    /// was asked for explicitly ([`Session::with_admission`] takes the registry's decision).
    ///
    /// # Errors
    /// [`SessionError`].
    pub fn new(device: D, file: &Gguf, context: u32, config: ReplayConfig) -> Result<Self, SessionError> {
        Self::with_admission(device, file, context, config, AdmissionDecision::not_evaluated())
    }

    /// [`Session::new`] with the admission predicate's decision: the controller is armed by the
    /// model-load default when `admission` admits the model or the backend was asked for
    /// explicitly; otherwise it fails closed to ordinary launches and
    /// [`Session::admission`] says why.
    ///
    /// # Errors
    /// [`SessionError`].
    pub fn with_admission(
        mut device: D,
        file: &Gguf,
        context: u32,
        config: ReplayConfig,
        admission: AdmissionDecision,
    ) -> Result<Self, SessionError> {
        let tokenizer = tokenizer_from_gguf(file)?;
        let model = language::load(&mut device, file, context)?;
        let mut controller = ReplayController::new(config);
        controller.configure_model_default(admission.admitted);
        let prefill_chunk = model.prefill_chunk().max(1);
        Ok(Self {
            device,
            model,
            funnel: Funnel::new(FUNNEL_CAPACITY),
            controller,
            tokenizer,
            admission,
            prefill_chunk,
            prefix_reuse: false,
            held: Held::default(),
        })
    }

    /// Whether a generation keeps the KV rows (and sequence state) of the longest prefix of its
    /// prompt that the device already holds from the last generation, and prefills only the
    /// rest (off by default). The logits are the bits a full prefill gives (see the `prefix`
    /// module), so no output changes; [`Generation::cached_tokens`] says how many were kept. A
    /// model with sequence state is reused only when the prompt continues the whole held
    /// sequence. Nothing held survives a model swap, a failed generation or
    /// [`Session::begin_sequence`].
    pub fn set_prefix_reuse(&mut self, reuse: bool) {
        self.prefix_reuse = reuse;
        if !reuse {
            self.held.clear();
        }
    }

    /// Prompt tokens per prefill pass, at most the model's [`Workload::prefill_chunk`] (the
    /// default); 1 runs the prompt one prompt step per token. Either way the KV cache and the
    /// logits are the same bits (see `kernel_refs::cpu::prefill`).
    pub fn set_prefill_chunk(&mut self, chunk: u32) {
        self.prefill_chunk = chunk.clamp(1, self.model.prefill_chunk().max(1));
    }

    /// Prompt tokens per prefill pass.
    #[must_use]
    pub const fn prefill_chunk(&self) -> u32 {
        self.prefill_chunk
    }

    /// Swaps the model: the controller releases its plan and drops tape and observations (the
    /// route proof's `reconfiguration` says why, with `why` as the detail), every object of the
    /// old model on the device is freed by a device reset, `file` is loaded with a KV cache of
    /// `context` positions and its tokenizer, and the controller is re-armed from `admission`.
    /// A reload of the same file goes the same way.
    ///
    /// # Errors
    /// [`SessionError`] for the new model's tokenizer or load; the session then holds no model
    /// it can run and must be reconfigured again before generating.
    pub fn reconfigure(
        &mut self,
        file: &Gguf,
        context: u32,
        admission: AdmissionDecision,
        why: &str,
    ) -> Result<(), SessionError> {
        self.held.clear();
        self.controller.reset_for_model(&mut self.device, why);
        self.device.reset();
        self.funnel = Funnel::new(FUNNEL_CAPACITY);
        self.tokenizer = tokenizer_from_gguf(file)?;
        self.model = language::load(&mut self.device, file, context)?;
        self.prefill_chunk = self.prefill_chunk.clamp(1, self.model.prefill_chunk().max(1));
        self.controller.configure_model_default(admission.admitted);
        self.admission = admission;
        Ok(())
    }

    /// Starts a new sequence as every request does before its prompt ([`Session::generate`]
    /// calls it): the next forward continues nothing, and every surface that holds sequence
    /// state is zeroed ([`Workload::reset_state`](crate::workload::Workload::reset_state)).
    ///
    /// # Errors
    /// The device's write error.
    pub fn begin_sequence(&mut self) -> Result<(), SessionError> {
        self.held.clear();
        let mut parts = Parts {
            device: &mut self.device,
            model: self.model.as_mut(),
            funnel: &mut self.funnel,
            controller: &mut self.controller,
        };
        parts.begin_sequence(false)
    }

    /// How many tokens' KV rows (and sequence state) the device holds from the generations so
    /// far: what the next one may keep with [`Session::set_prefix_reuse`].
    #[must_use]
    pub fn held_tokens(&self) -> usize {
        self.held.len()
    }

    /// The KV-cache positions of the loaded model.
    #[must_use]
    pub fn context(&self) -> u32 {
        self.model.context()
    }

    /// The model's state surfaces ([`Workload::surfaces`](crate::workload::Workload::surfaces)),
    /// to read through [`Session::device_mut`].
    #[must_use]
    pub fn surfaces(&self) -> &[crate::workload::Surface] {
        self.model.surfaces()
    }

    /// The admission decision the controller was configured with.
    #[must_use]
    pub const fn admission(&self) -> &AdmissionDecision {
        &self.admission
    }

    /// The device the session runs on (to arm a [`hal::FaultInjection`], for example).
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.device
    }

    /// The device the session runs on.
    #[must_use]
    pub const fn device(&self) -> &D {
        &self.device
    }

    /// The tokenizer.
    #[must_use]
    pub const fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The route proof as of now.
    #[must_use]
    pub fn route_proof(&self) -> RouteProof {
        self.controller.route_proof()
    }

    /// The controller.
    #[must_use]
    pub const fn controller(&self) -> &ReplayController {
        &self.controller
    }

    /// Generates from `prompt` (token ids) from position 0, calling `on_text` once per generated
    /// token with the text that became safe to show (empty while a possible stop string is held
    /// back), and once more with the held-back rest when `max_tokens` is reached. During the
    /// prefill it is called with `""` after each prefill pass but the last (each prompt token
    /// when the prompt runs step by step), so that a long prompt can be stopped too. `on_text` returning [`ControlFlow::Break`] ends the generation
    /// before the next forward, with finish reason `cancelled`. Every call starts a new
    /// sequence: the KV cache is rewritten from position 0, or, with
    /// [`Session::set_prefix_reuse`], from the end of the prefix the device already holds.
    ///
    /// # Errors
    /// [`SessionError`]; after a replay failure the controller is in its sticky fallback.
    pub fn generate(
        &mut self,
        prompt: &[u32],
        options: &GenerateOptions,
        mut on_text: impl FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Generation, SessionError> {
        self.generate_with(prompt, options, |output| on_text(output.text))
    }

    /// [`Session::generate`] with each call's [`Output`]: the text, and the token just sampled
    /// with its log-probabilities when asked for.
    ///
    /// # Errors
    /// [`SessionError`]; after a replay failure the controller is in its sticky fallback.
    pub fn generate_with(
        &mut self,
        prompt: &[u32],
        options: &GenerateOptions,
        on_output: impl FnMut(Output<'_>) -> ControlFlow<()>,
    ) -> Result<Generation, SessionError> {
        let generation = self.run(prompt, options, on_output);
        if generation.is_err() {
            // A forward that failed midway leaves rows (or state) no token list describes.
            self.held.clear();
        }
        generation
    }

    fn run(
        &mut self,
        prompt: &[u32],
        options: &GenerateOptions,
        mut on_output: impl FnMut(Output<'_>) -> ControlFlow<()>,
    ) -> Result<Generation, SessionError> {
        if prompt.is_empty() {
            return Err(SessionError::EmptyPrompt);
        }
        let context = self.model.context();
        let needed = u64::try_from(prompt.len()).unwrap_or(u64::MAX) + u64::from(options.max_tokens);
        if needed > u64::from(context) {
            return Err(SessionError::Context { prompt: prompt.len(), max_tokens: options.max_tokens, context });
        }
        let sampler_error = |e: tokenizer::SamplerError| SessionError::Sampler(e.to_string());
        let mut sampler = Sampler::new(options.sampler).map_err(sampler_error)?;
        let mut processor = LogitsProcessor::new(options.logits.clone()).map_err(sampler_error)?;
        if let Some(top) = options.top_logprobs.filter(|&top| top > tokenizer::TOP_LOGPROBS_MAX) {
            return Err(sampler_error(tokenizer::SamplerError::TopLogprobs {
                value: top,
                limit: tokenizer::TOP_LOGPROBS_MAX,
            }));
        }
        // One record reused for every token: with logprobs asked, only the first step allocates.
        let mut record = options.top_logprobs.map(|_| TokenLogprobs::default());
        let tokenizer = &self.tokenizer;
        let mut stops = StopMatcher::new(tokenizer.end_of_generation().to_vec(), options.stop.clone());
        let mut decoder = Decoder::new(tokenizer, false);
        let mut parts = Parts {
            device: &mut self.device,
            model: self.model.as_mut(),
            funnel: &mut self.funnel,
            controller: &mut self.controller,
        };
        let sequence_state = parts.model.surfaces().iter().any(|surface| surface.state.is_some());
        let cached_tokens = if self.prefix_reuse { self.held.reusable(prompt, sequence_state) } else { 0 };
        self.held.truncate(cached_tokens);
        let mut position = u32::try_from(cached_tokens).unwrap_or(u32::MAX);
        // Prefill: every prompt token not kept, the last included, is a prompt step; the decode
        // forwards after it are continuations (the controller decides their eligibility).
        parts.begin_sequence(cached_tokens > 0)?;
        let (mut text, mut tokens) = (String::new(), Vec::new());
        let mut decode_time = Duration::ZERO;
        let mut decode_forwards = 0u32;
        let prefill_start = Instant::now();
        let chunk = usize::try_from(self.prefill_chunk).unwrap_or(1).max(1);
        let prefilled = &prompt[cached_tokens..];
        let passes = prefilled.len().div_ceil(chunk);
        for (i, pass) in prefilled.chunks(chunk).enumerate() {
            if chunk == 1 {
                parts.forward(pass[0], position, Step::Prompt)?;
            } else {
                parts.controller.prefill(parts.device, parts.funnel, parts.model, position, pass)?;
            }
            position += u32::try_from(pass.len()).unwrap_or(u32::MAX);
            self.held.extend(pass);
            if i + 1 < passes && on_output(Output { text: "", token: None, logprobs: None, tokenizer }).is_break() {
                let prompt_tokens = prompt.len();
                return Ok(Generation {
                    text,
                    tokens,
                    prompt_tokens,
                    cached_tokens,
                    decode_time,
                    decode_forwards,
                    prefill_time: Duration::ZERO,
                    finish_reason: "cancelled",
                });
            }
        }
        let mut finish_reason = "length";
        // The logits of the last forward: a forward returns once its launches are published,
        // and this read is where the host waits for them, so a decode step is timed from its
        // forward to its logits.
        let mut logits = parts.model.logits(parts.device)?;
        let prefill_time = prefill_start.elapsed();
        while tokens.len() < usize::try_from(options.max_tokens).unwrap_or(usize::MAX) {
            processor.apply(&mut logits).map_err(sampler_error)?;
            let token = sampler.sample(&logits).map_err(sampler_error)?;
            if let (Some(record), Some(top)) = (record.as_mut(), options.top_logprobs) {
                tokenizer::log_probabilities(&logits, token, top, record).map_err(sampler_error)?;
            }
            processor.accept(token);
            tokens.push(token);
            let piece = decoder.push(token).map_err(|e| SessionError::Tokenizer(e.to_string()))?;
            let step = stops.push(token, &piece);
            text.push_str(&step.emit);
            if on_output(Output { text: &step.emit, token: Some(token), logprobs: record.as_ref(), tokenizer })
                .is_break()
            {
                finish_reason = "cancelled";
                break;
            }
            if step.stop {
                finish_reason = "stop";
                break;
            }
            if tokens.len() >= usize::try_from(options.max_tokens).unwrap_or(usize::MAX) {
                break;
            }
            let start = Instant::now();
            parts.forward(token, position, Step::Continuation)?;
            self.held.extend(&[token]);
            logits = parts.model.logits(parts.device)?;
            decode_time += start.elapsed();
            decode_forwards += 1;
            position += 1;
        }
        if finish_reason == "length" {
            let rest = stops.finish();
            text.push_str(&rest);
            // The generation is over: a request to stop changes nothing now.
            let _ = on_output(Output { text: &rest, token: None, logprobs: None, tokenizer });
        }
        Ok(Generation {
            text,
            tokens,
            prompt_tokens: prompt.len(),
            cached_tokens,
            decode_time,
            decode_forwards,
            prefill_time,
            finish_reason,
        })
    }
}

impl From<WorkloadError> for SessionError {
    fn from(error: WorkloadError) -> Self {
        Self::Load(error)
    }
}

impl From<LoadError> for SessionError {
    fn from(error: LoadError) -> Self {
        match error {
            LoadError::Model(e) => Self::Model(e),
            LoadError::Workload(e) => Self::Load(e),
        }
    }
}

/// The parts of a [`Session`] a forward mutates, borrowed apart from its tokenizer.
struct Parts<'a, D: Device> {
    device: &'a mut D,
    model: &'a mut dyn LanguageModel,
    funnel: &'a mut Funnel,
    controller: &'a mut ReplayController,
}

impl<D: Device> Parts<'_, D> {
    /// A new sequence: the plan, when valid, stays installed and the next forward continues
    /// nothing. From position 0 (`continues_held` false), the sequence state (convolution and
    /// recurrent state) starts from zeros and the KV cache is overwritten from position 0;
    /// after a kept prefix, the state is the held sequence's.
    fn begin_sequence(&mut self, continues_held: bool) -> Result<(), SessionError> {
        self.controller.begin_sequence();
        if !continues_held {
            self.model.reset_state(self.device)?;
        }
        Ok(())
    }

    fn forward(&mut self, token: u32, position: u32, step: Step) -> Result<(), SessionError> {
        self.model.set_token(token)?;
        self.controller.forward(self.device, self.funnel, self.model, position, step)?;
        Ok(())
    }
}
