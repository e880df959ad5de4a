//! How fast the host reads page-locked memory (`Device::alloc_host`) against plain
//! memory, on one thread and all, before and after the device writes it (a DMA copy);
//! and a device-to-host copy into plain memory. 64 MB each.
//!
//!     cargo run --release -p clcb --example host_read

use gpu_kernels::Device;
use rayon::prelude::*;
use std::time::Instant;

/// Runs `f`, and its rate over `bytes` in GB/s.
fn timed<R>(bytes: usize, f: impl FnOnce() -> R) -> (R, f64) {
    let t = Instant::now();
    let r = f();
    (r, bytes as f64 / t.elapsed().as_secs_f64() / 1e9)
}

fn fill(x: &mut [u32]) {
    x.par_iter_mut()
        .enumerate()
        .for_each(|(i, v)| *v = i as u32);
}

fn sum1(x: &[u32]) -> u64 {
    x.iter().map(|&v| v as u64).sum()
}

fn sumn(x: &[u32]) -> u64 {
    x.par_chunks(1 << 16).map(sum1).sum()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = match Device::gpu(0, clcb::PTX) {
        Ok(d) => d,
        Err(_) => Device::emulator(),
    };
    let n = 16 << 20;
    let bytes = 4 * n;
    let mut h = dev.alloc_host::<u32>(n)?;
    let mut v = vec![0u32; n];
    for round in 0..2 {
        let ((), fill_h) = timed(bytes, || fill(h.as_mut_slice()));
        let ((), fill_v) = timed(bytes, || fill(&mut v));
        let (a, r1h) = timed(bytes, || sum1(h.as_slice()));
        let (b, r1v) = timed(bytes, || sum1(&v));
        let (c, rnh) = timed(bytes, || sumn(h.as_slice()));
        let (d, rnv) = timed(bytes, || sumn(&v));
        assert!(a == b && c == d && a == c);
        println!("round {round}: fill page-locked {fill_h:.1} GB/s, plain {fill_v:.1}; read one thread page-locked {r1h:.2} GB/s, plain {r1v:.2}; all threads page-locked {rnh:.2} \
            GB/s, plain {rnv:.2}");
    }
    let mut d = dev.alloc::<u32>(n)?;
    dev.write(&mut d, 0, &v)?;
    let (r, dma_h) = timed(bytes, || dev.read_into(&d, 0, h.as_mut_slice()));
    r?;
    let (r, dma_v) = timed(bytes, || dev.read_into(&d, 0, &mut v));
    r?;
    let (a, rnh) = timed(bytes, || sumn(h.as_slice()));
    let (a1, r1h) = timed(bytes, || sum1(h.as_slice()));
    assert_eq!(a, a1);
    println!("device to host: into page-locked {dma_h:.1} GB/s, into plain {dma_v:.1}; then reading the page-locked copy: one thread {r1h:.2} GB/s, all threads {rnh:.2}");
    Ok(())
}
