//! `cargo run --release -p gpu-selftest --example selftest [ORDINAL]`: the self-tests on
//! a GPU (or, without one, on the emulator), PASS/FAIL per kernel, non-zero exit on any
//! failure. `harness selftest` does the same from the main binary.

use gpu_kernels::Device;
use gpu_selftest::{run_all, Sizes};
use std::process::ExitCode;

fn main() -> ExitCode {
    let ordinal = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    let (dev, sizes) = match Device::gpu(ordinal, gpu_selftest::PTX) {
        Ok(d) => (d, Sizes::LARGE),
        Err(e) => {
            println!("note: {e}; running on the host SIMT emulator instead");
            (Device::emulator(), Sizes::SMALL)
        }
    };
    println!("device: {}", dev.name());
    match run_all(&dev, sizes) {
        Ok(outcomes) => {
            let mut ok = true;
            for o in outcomes {
                match o.failure {
                    None => println!("PASS  {}", o.name),
                    Some(f) => {
                        ok = false;
                        println!("FAIL  {}: {f}", o.name)
                    }
                }
            }
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            println!("FAIL  device error: {e}");
            ExitCode::FAILURE
        }
    }
}
