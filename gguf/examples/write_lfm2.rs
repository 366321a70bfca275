//! Writes an `lfm2` GGUF: the tiny model of `gguf::tiny_lfm2` (default configuration) or a
//! published shape of `gguf::shaped_lfm2` with seeded random weights.
//!
//! Usage: `cargo run -p gguf --release --example write_lfm2 -- (tiny | lfm2-350m) PATH [SEED]`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (name, path, seed) = match args.as_slice() {
        [name, path] => (name.as_str(), path.as_str(), 0),
        [name, path, seed] => match seed.parse::<u64>() {
            Ok(seed) => (name.as_str(), path.as_str(), seed),
            Err(e) => {
                eprintln!("write_lfm2: seed {seed:?}: {e}");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: write_lfm2 (tiny | lfm2-350m) PATH [SEED]");
            return ExitCode::from(2);
        }
    };
    let written = if name == "tiny" {
        gguf::write_tiny_lfm2(path, &gguf::TinyLfm2Config::default()).map(|()| 0)
    } else if let Some(shape) = gguf::shaped_lfm2::SHAPES.iter().find(|s| s.name == name) {
        gguf::shaped_lfm2::write_lfm2(path, shape, seed)
    } else {
        eprintln!("write_lfm2: no shape {name:?} (tiny, lfm2-350m)");
        return ExitCode::from(2);
    };
    match written {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("write_lfm2: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}
