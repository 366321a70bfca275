//! One arm of the bench: a [`Session`] that runs rows, kept in this process (`resident`) or in a
//! spawned `redline bench-worker` process of the same binary (`fresh`), which answers one JSON
//! line per command on its standard output.
//!
//! Worker protocol (one command per line on standard input): `row` → a [`RowRecord`];
//! `proof` → the route proof; `tape` → the captured tape's fact ([`super::tape_record::fact`]);
//! `inject replay-timeout|queue-fault` → `{"ok": true}`. End of input ends the worker.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use hal::{Device, FaultInjection, Injection};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{BenchError, WorkerError};
use crate::model::{GenerateOptions, Session};

/// One timed generation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RowRecord {
    /// Decode tokens per second (`None` when the row failed).
    pub tok_s: Option<f64>,
    /// Milliseconds per decode token.
    pub ms_per_token: Option<f64>,
    /// Decode forwards timed.
    pub decode_forwards: u32,
    /// The generated token ids.
    pub tokens: Vec<u32>,
    /// Their decoded text.
    pub text: String,
    /// Why generation ended (`length`, `stop`, `cancelled`; empty when the row failed).
    pub finish_reason: String,
    /// Forwards of this row that replayed the plan.
    pub retained: u64,
    /// Positions this row replayed, in order.
    pub replay_positions: Vec<u32>,
    /// The eligible positions of this row (every decode continuation).
    pub eligible_positions: Vec<u32>,
    /// The tape and submission identity after the row (`null` before preparation).
    pub identity: Value,
    /// The controller state after the row.
    pub state: String,
    /// Why the row failed.
    pub error: Option<String>,
}

/// Runs one row on `session` and measures it against the route proof before and after.
pub fn run_row<D: Device>(session: &mut Session<D>, prompt: &[u32], options: &GenerateOptions) -> RowRecord {
    let before = session.route_proof().observations;
    let result = session.generate(prompt, options, |_| std::ops::ControlFlow::Continue(()));
    let after = session.route_proof();
    let seen = before.replay_positions.len().min(after.observations.replay_positions.len());
    let replay_positions = after.observations.replay_positions[seen..].to_vec();
    let identity = serde_json::json!({"tape": after.tape, "submission": after.submission});
    let retained = after.observations.retained.saturating_sub(before.retained);
    let state = after.state.to_owned();
    match result {
        Ok(generation) => {
            let tok_s = generation.tokens_per_second();
            let forwards = generation.decode_forwards;
            let ms = (forwards > 0).then(|| generation.decode_time.as_secs_f64() * 1e3 / f64::from(forwards));
            // The prompt steps, the last included, are not eligible (docs/ARCHITECTURE.md,
            // "Eligibility"): the decode continuations are, from the position after the prompt.
            let first = u32::try_from(prompt.len()).unwrap_or(u32::MAX);
            RowRecord {
                tok_s: (tok_s > 0.0).then_some(tok_s),
                ms_per_token: ms,
                decode_forwards: forwards,
                tokens: generation.tokens,
                text: generation.text,
                finish_reason: generation.finish_reason.to_owned(),
                retained,
                replay_positions,
                eligible_positions: (first..first.saturating_add(forwards)).collect(),
                identity,
                state,
                error: None,
            }
        }
        Err(error) => RowRecord {
            tok_s: None,
            ms_per_token: None,
            decode_forwards: 0,
            tokens: Vec::new(),
            text: String::new(),
            finish_reason: String::new(),
            retained,
            replay_positions,
            eligible_positions: Vec::new(),
            identity,
            state,
            error: Some(error.to_string()),
        },
    }
}

/// The fact of `session`'s captured tape.
#[must_use]
pub fn tape_fact<D: Device>(session: &Session<D>) -> Value {
    let controller = session.controller();
    super::tape_record::fact(controller.tape(), controller.state().name())
}

/// Parses an `--inject-fault` value.
///
/// # Errors
/// The accepted values.
pub fn parse_fault(s: &str) -> Result<Injection, String> {
    match s {
        "replay-timeout" => Ok(Injection::Hang),
        "queue-fault" => Ok(Injection::QueueFault),
        _ => Err(format!("{s:?}: accepted values: replay-timeout, queue-fault")),
    }
}

/// An arm that can run rows.
#[derive(Debug)]
pub enum Arm<D: Device> {
    /// A session in this process.
    Resident(Box<Session<D>>),
    /// A worker process.
    Fresh(Worker),
}

impl<D: Device + FaultInjection> Arm<D> {
    /// Runs one row.
    ///
    /// # Errors
    /// Only a broken worker; a failed generation is a row with an error.
    pub fn row(&mut self, prompt: &[u32], options: &GenerateOptions) -> Result<RowRecord, BenchError> {
        match self {
            Arm::Resident(session) => Ok(run_row(session, prompt, options)),
            Arm::Fresh(worker) => Ok(serde_json::from_value(worker.ask("row")?).map_err(WorkerError::Row)?),
        }
    }

    /// The route proof as of now.
    ///
    /// # Errors
    /// Only a broken worker.
    pub fn proof(&mut self) -> Result<Value, BenchError> {
        match self {
            Arm::Resident(session) => Ok(serde_json::to_value(session.route_proof())?),
            Arm::Fresh(worker) => Ok(worker.ask("proof")?),
        }
    }

    /// The captured tape's fact: its summary, or why there is none.
    ///
    /// # Errors
    /// Only a broken worker.
    pub fn tape(&mut self) -> Result<Value, BenchError> {
        match self {
            Arm::Resident(session) => Ok(tape_fact(session)),
            Arm::Fresh(worker) => Ok(worker.ask("tape")?),
        }
    }

    /// Arms a device fault ([`hal::FaultInjection`]).
    ///
    /// # Errors
    /// Only a broken worker.
    pub fn inject(&mut self, fault: &str) -> Result<(), BenchError> {
        match self {
            Arm::Resident(session) => {
                let fault = parse_fault(fault).map_err(BenchError::Usage)?;
                Ok(session.device_mut().inject(fault)?)
            }
            Arm::Fresh(worker) => Ok(worker.ask(&format!("inject {fault}")).map(drop)?),
        }
    }
}

/// A `redline bench-worker` process.
#[derive(Debug)]
pub struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Worker {
    /// Spawns this binary with `args` (a `bench-worker` command line) and waits for its ready
    /// line.
    ///
    /// # Errors
    /// Spawning, or a worker that exits before it is ready.
    pub fn spawn(args: &[String]) -> Result<Self, WorkerError> {
        let exe = std::env::current_exe().map_err(WorkerError::Locate)?;
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(WorkerError::Spawn)?;
        let stdin = child.stdin.take().ok_or(WorkerError::Pipe("stdin"))?;
        let stdout = BufReader::new(child.stdout.take().ok_or(WorkerError::Pipe("stdout"))?);
        let mut worker = Self { child, stdin: Some(stdin), stdout };
        worker.read_line().map_err(|e| WorkerError::Start(Box::new(e)))?;
        Ok(worker)
    }

    fn read_line(&mut self) -> Result<Value, WorkerError> {
        let mut line = String::new();
        if self.stdout.read_line(&mut line).map_err(WorkerError::Read)? == 0 {
            return Err(WorkerError::Exited);
        }
        let value: Value = serde_json::from_str(&line).map_err(WorkerError::Line)?;
        if let Some(error) = value.get("error").filter(|_| value.get("worker_error").is_some()) {
            return Err(WorkerError::Reported(error.to_string()));
        }
        Ok(value)
    }

    fn ask(&mut self, command: &str) -> Result<Value, WorkerError> {
        let stdin = self.stdin.as_mut().ok_or(WorkerError::Closed)?;
        writeln!(stdin, "{command}").map_err(WorkerError::Write)?;
        stdin.flush().map_err(WorkerError::Flush)?;
        self.read_line()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing stdin ends the worker's loop; wait so that no zombie is left behind.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}
