//! `redline generate`: text from a GGUF model (`llama` or `gemma3`), streamed, then the speed,
//! the route taken and the controller state.

use std::io::Write as _;
use std::ops::ControlFlow;
use std::process::ExitCode;

use crate::select::AnyDevice;
use crate::select::select_for_model;
use anyhow::{Context as _, Result, bail};
use engine::model::{GenerateOptions, Session};
use infile::{escape, escape_lines};
use tokenizer::{ChatTemplate, Message, SamplerConfig};

use crate::exit::InvalidInput as _;
use crate::model_args::{ModelArgs, start_session};

/// Generate text with a model on a device.
///
/// The prompt is prefilled in batched passes of up to 128 tokens (ordinary launches,
/// ineligible for the retained route); every later token is a plain continuation, which the replay controller records, validates and then
/// replays as one submission.
///
/// The model is a `llama` (SmolLM2-135M, `tiny`) or a `gemma3` (Gemma 3 270M, `tiny-gemma3`),
/// as its `general.architecture` says. The file is checked before anything runs: its GGUF
/// structure, its hyperparameters (`<arch>.context_length` at least 1, the RoPE base and the
/// RMSNorm epsilon finite and above 0, head counts the kernels take), one vocabulary size in
/// `<arch>.vocab_size`, `tokenizer.ggml.tokens` and the embedding and output rows, every
/// tensor's type and shape, its tokenizer (no duplicate token or merge), every weight finite
/// (each F32 element, each quantised block's scales) and, with --chat, its chat template (a base
/// model such as Gemma 3 270M has none: --chat is refused, naming the model).
///
/// Exit codes: 0 done; 1 the input is invalid (the model file, naming the key or tensor and the
/// value) or the device or a forward failed; 2 usage or I/O (a flag, a missing or unreadable
/// file).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The prompt: continued as plain text, or with --chat the user's message.
    #[arg(long)]
    pub prompt: Option<String>,
    /// Use the model's chat template (ChatML): with --prompt, one user message; without it, an
    /// interactive conversation, one user message per line of standard input (end with EOF). A
    /// model without a chat template (a base model) is refused (exit 2).
    #[arg(long)]
    pub chat: bool,
    /// New tokens at most.
    #[arg(long, default_value_t = 64)]
    pub max_tokens: u32,
    /// 0 is greedy.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Keep the k most likely tokens (0: off).
    #[arg(long, default_value_t = 0)]
    pub top_k: usize,
    /// Nucleus sampling threshold in (0, 1].
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f32,
    /// Sampler seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Stop strings (repeatable).
    #[arg(long)]
    pub stop: Vec<String>,
    /// Print `{"text", "tokens", "route"}` as JSON instead of streaming.
    #[arg(long)]
    pub json: bool,
    /// Prompt tokens per prefill pass, at most the model's pass (128): 1 runs the prompt one
    /// decode step per token, as the tape records it (what `redline census` reconciles from
    /// position 0). The logits are the same bits either way.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub prefill_chunk: Option<u32>,
}

/// Runs `redline generate`.
///
/// # Errors
/// Usage and I/O errors (exit 2); an invalid model file (exit 1, marked [`crate::exit::Invalid`]);
/// device and forward failures are reported with exit 1.
pub fn run(args: &Args) -> Result<ExitCode> {
    let opened = args.model.open()?;
    let path = opened.resolved.path.display().to_string();
    let template = if args.chat { Some(chat_template(&opened.file, &args.model.model.model, &path)?) } else { None };
    let (device, reason) = match select_for_model(opened.kind, Some(opened.target)) {
        Ok(selected) => selected,
        Err(error) => {
            eprintln!("redline: {}", escape_lines(&error.to_string()));
            return Ok(ExitCode::from(1));
        }
    };
    eprintln!("device: {}", escape_lines(&reason));
    let sha256 = opened.sha256.clone();
    let setting = engine::admission::model::Setting {
        kind: device.kind().name(),
        context: opened.context,
        transport: opened.config.transport,
    };
    let admission = engine::admission::model::decide(&opened.admissions, &opened.file, &sha256, &device, setting);
    eprintln!("admission: {}", escape_lines(&admission.reason));
    let mut session = match start_session(device, &opened.file, opened.context, opened.config, admission) {
        Ok(session) => session,
        Err(error) => {
            // A fault of the file and a device that fails to take the model both end here.
            eprintln!("redline: {}: {}", escape(&path), escape_lines(&format!("{error:#}")));
            return Ok(ExitCode::from(1));
        }
    };
    if let Some(chunk) = args.prefill_chunk {
        session.set_prefill_chunk(chunk);
    }
    let options = GenerateOptions {
        max_tokens: args.max_tokens,
        sampler: SamplerConfig { temperature: args.temperature, top_k: args.top_k, top_p: args.top_p, seed: args.seed },
        stop: args.stop.clone(),
        logits: tokenizer::LogitsConfig::default(),
        top_logprobs: None,
    };
    let model = ModelReport { path, sha256 };
    if let Some(template) = template {
        let Some(prompt) = &args.prompt else { return converse(&mut session, &template, &options) };
        let ids = template.encode(session.tokenizer(), &[Message::new("user", prompt)], true);
        return one(&mut session, &ids, &options, args.json, &model);
    }
    let Some(prompt) = &args.prompt else { bail!("give --prompt TEXT, or --chat for a conversation") };
    let ids = session.tokenizer().encode_special(prompt, true, false);
    one(&mut session, &ids, &options, args.json, &model)
}

/// The model's chat template (`--chat`), recognised before anything is loaded.
///
/// # Errors
/// A usage error (exit 2) when the model has no chat template, naming the model (`model`, the
/// `--model` argument) and saying to drop `--chat`. Invalid input (exit 1) when the key is not a
/// string or not a template this build renders, naming the file, the key and the byte offset
/// where the template departs from the supported ones.
fn chat_template(file: &gguf::Gguf, model: &str, path: &str) -> Result<ChatTemplate> {
    if file.get(CHAT_TEMPLATE_KEY).is_none() {
        let model = if model == path { path.to_owned() } else { format!("{model} ({path})") };
        bail!(
            "--chat: the model {model} has no chat template ({CHAT_TEMPLATE_KEY}): it is a base model, \
             which continues text; drop --chat and give the text to continue with --prompt"
        );
    }
    let text =
        file.str(CHAT_TEMPLATE_KEY).invalid().with_context(|| format!("{path}: --chat needs a chat template"))?;
    ChatTemplate::from_gguf_template(text).invalid().with_context(|| format!("{path}: {CHAT_TEMPLATE_KEY}"))
}

/// The metadata key of the chat template.
const CHAT_TEMPLATE_KEY: &str = "tokenizer.chat_template";

/// The model file in reports.
#[derive(Debug)]
struct ModelReport {
    path: String,
    sha256: String,
}

/// An interactive conversation: each line of standard input is a user message.
fn converse(session: &mut Session<AnyDevice>, template: &ChatTemplate, options: &GenerateOptions) -> Result<ExitCode> {
    let mut messages = Vec::new();
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        eprint!("> ");
        line.clear();
        if stdin.read_line(&mut line)? == 0 {
            return Ok(ExitCode::SUCCESS);
        }
        messages.push(Message::new("user", line.trim_end_matches(['\n', '\r'])));
        let ids = template.encode(session.tokenizer(), &messages, true);
        let mut out = std::io::stdout();
        let generation = session.generate(&ids, options, |piece| {
            let _ = out.write_all(escape_lines(piece).as_bytes()).and_then(|()| out.flush());
            ControlFlow::Continue(())
        });
        match generation {
            Ok(generation) => {
                println!();
                summary(&generation, &session.route_proof());
                messages.push(Message::new("assistant", &generation.text));
            }
            Err(error) => {
                eprintln!("\nredline: {}", escape_lines(&error.to_string()));
                return Ok(ExitCode::from(1));
            }
        }
    }
}

/// One generation from `ids`, streamed (or as JSON).
fn one(
    session: &mut Session<AnyDevice>,
    ids: &[u32],
    options: &GenerateOptions,
    json: bool,
    model: &ModelReport,
) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let generation = session.generate(ids, options, |piece| {
        if !json {
            let mut out = stdout.lock();
            // Streaming output: a closed pipe ends the stream, not the generation. The text is
            // the vocabulary's, the model file's: its control characters are spelled out.
            let _ = out.write_all(escape_lines(piece).as_bytes()).and_then(|()| out.flush());
        }
        ControlFlow::Continue(())
    });
    let generation = match generation {
        Ok(generation) => generation,
        Err(error) => {
            eprintln!("\nredline: {}", escape_lines(&error.to_string()));
            eprintln!("route: {}", serde_json::to_string(&session.route_proof())?);
            return Ok(ExitCode::from(1));
        }
    };
    let proof = session.route_proof();
    if json {
        let report = serde_json::json!({
            "text": generation.text,
            "tokens": generation.tokens,
            "prompt_tokens": generation.prompt_tokens,
            "finish_reason": generation.finish_reason,
            "tokens_per_second": generation.tokens_per_second(),
            "prefill_tokens_per_second": generation.prefill_tokens_per_second(),
            "time_to_first_token_seconds": generation.prefill_time.as_secs_f64(),
            "model": {"path": model.path, "sha256": model.sha256},
            "route": proof,
            "admission": session.admission(),
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!();
        summary(&generation, &proof);
        eprintln!("model: {} (sha256 {})", escape(&model.path), model.sha256);
    }
    Ok(ExitCode::SUCCESS)
}

/// Speed, route and controller state after a generation.
fn summary(generation: &engine::model::Generation, proof: &engine::replay::RouteProof) {
    eprintln!(
        "{} prompt + {} new tokens ({}); prefill {:.1} tok/s (first token after {:.3} s); decode {:.2} tok/s; state {}; \
         retained tokens {}, ordinary {}, recorded {}, shadow {}",
        generation.prompt_tokens,
        generation.tokens.len(),
        generation.finish_reason,
        generation.prefill_tokens_per_second(),
        generation.prefill_time.as_secs_f64(),
        generation.tokens_per_second(),
        proof.state,
        proof.observations.retained,
        proof.observations.ordinary,
        proof.observations.recorded,
        proof.observations.shadow,
    );
    if let Some(reason) = &proof.fallback_reason {
        eprintln!("fallback: {}", escape_lines(reason));
    }
}
