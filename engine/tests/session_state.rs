//! A request's start resets the sequence state: on the tiny `lfm2` (convolution state) and the
//! tiny `qwen35` (convolution and recurrent state), a generation leaves its state surfaces
//! written; `Session::begin_sequence`, which every request runs before its prompt, zeroes them
//! (read back from the device) and leaves every other surface (the KV cache, the logits) as it
//! was; and a second generation of the same prompt after another one gives the first one's tokens,
//! as a fresh session does.

use std::ops::ControlFlow;

use engine::model::{GenerateOptions, Session};
use engine::replay::ReplayConfig;
use gguf::Gguf;
use hal::Device;
use pm4_encoding::Target;
use soft_device::SimDevice;
use tokenizer::{LogitsConfig, SamplerConfig};

fn options() -> GenerateOptions {
    GenerateOptions {
        max_tokens: 10,
        sampler: SamplerConfig { temperature: 0.0, ..SamplerConfig::default() },
        stop: Vec::new(),
        logits: LogitsConfig::default(),
        top_logprobs: None,
    }
}

/// Every surface's used bytes, by name, with whether it holds sequence state.
fn read_surfaces(session: &mut Session<SimDevice>) -> Vec<(String, bool, Vec<u8>)> {
    let surfaces = session.surfaces().to_vec();
    surfaces
        .iter()
        .map(|s| {
            let mut bytes = vec![0u8; usize::try_from(s.bytes).unwrap()];
            session.device_mut().read(s.va, &mut bytes).unwrap();
            (s.name.clone(), s.state.is_some(), bytes)
        })
        .collect()
}

#[test]
fn a_new_sequence_zeroes_the_state_surfaces_and_nothing_else() {
    let files = [
        ("lfm2", gguf::tiny_lfm2(&gguf::TinyLfm2Config::default()), 1),
        ("qwen35", gguf::tiny_qwen35(&gguf::TinyQwen35Config::default()), 2),
    ];
    for (architecture, bytes, state_surfaces) in files {
        let file = Gguf::parse(bytes).unwrap();
        let config = ReplayConfig::default();
        let mut session = Session::new(SimDevice::new(Target::Gfx1100), &file, 64, config.clone()).unwrap();
        let (first, second) = ([5u32, 9, 14, 20], [7u32, 3, 30]);
        let run = |session: &mut Session<SimDevice>, prompt: &[u32]| {
            session.generate(prompt, &options(), |_| ControlFlow::Continue(())).unwrap().tokens
        };
        let a = run(&mut session, &first);
        let written = read_surfaces(&mut session);
        let states: Vec<&(String, bool, Vec<u8>)> = written.iter().filter(|(_, state, _)| *state).collect();
        assert_eq!(states.len(), state_surfaces, "{architecture}");
        for (name, _, bytes) in &states {
            assert!(bytes.iter().any(|&b| b != 0), "{architecture}: {name} was written by the generation");
        }
        session.begin_sequence().unwrap();
        for ((name, state, before), (_, _, after)) in written.iter().zip(read_surfaces(&mut session)) {
            if *state {
                assert!(after.iter().all(|&b| b == 0), "{architecture}: {name} is zero after begin_sequence");
            } else {
                assert!(before == &after, "{architecture}: {name} is untouched by begin_sequence");
            }
        }
        let _ = run(&mut session, &second);
        assert_eq!(run(&mut session, &first), a, "{architecture}: the first prompt again, after another");
        let mut fresh = Session::new(SimDevice::new(Target::Gfx1100), &file, 64, config).unwrap();
        assert_eq!(run(&mut fresh, &first), a, "{architecture}: a fresh session");
    }
}
