//! Encoding throughput of a 1,000-dispatch gfx12 stream against a plain copy of the same dwords.
//!
//! Each dispatch: SET_SH_REG PGM_LO/HI, RSRC1/RSRC2, RSRC3, NUM_THREAD_X/Y/Z, USER_DATA_0/1,
//! DISPATCH_DIRECT, then a CS_PARTIAL_FLUSH + ACQUIRE_MEM boundary. Both benchmarks report
//! throughput in dwords ("elements"); the encode/copy ratio is the figure of merit (target ≤ 4×).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pm4_encoding::Writer;
use pm4_encoding::packet::acquire_mem::GliInv;
use pm4_encoding::packet::{AcquireMem, DispatchDirect, DispatchInitiator, EventWrite, GcrCntl, SetShReg};
use pm4_encoding::regs::gfx12;

const DISPATCHES: usize = 1_000;

/// What one recorded launch contributes to the stream.
#[derive(Clone, Copy)]
struct Launch {
    entry: u64,
    rsrc: [u32; 3],
    block: [u32; 3],
    kernarg: u64,
    grid: [u32; 3],
    wave32: bool,
}

fn launches() -> Vec<Launch> {
    (0..DISPATCHES)
        .map(|i| {
            let i32 = u32::try_from(i).unwrap();
            Launch {
                entry: 0x7f00_0000_0000 + (u64::from(i32 % 37) << 8),
                rsrc: [0x600f_0001 + (i32 % 3), 0x0000_0184 | ((i32 % 4) << 15), 0],
                block: [32 * (1 + i32 % 8), 1, 1],
                kernarg: 0x7e00_0000_0000 + u64::from(i32) * 256,
                grid: [1 + i32 % 97, 1 + i32 % 5, 1],
                wave32: i % 2 == 0,
            }
        })
        .collect()
}

/// GL2/GLV/GLK/GLI invalidate for a dependent dispatch (GCR_CNTL fields, reference §4).
fn boundary_gcr() -> GcrCntl {
    GcrCntl::from_raw(0).with_gli_inv(GliInv::All).with_glk_inv(1).with_glv_inv(1).with_gl2_inv(1)
}

fn split(address: u64) -> [u32; 2] {
    // CAST: low and high halves of a 64-bit address.
    #[allow(clippy::cast_possible_truncation)]
    [address as u32, (address >> 32) as u32]
}

fn encode(launches: &[Launch], out: &mut [u32]) -> Result<usize, Box<dyn std::error::Error>> {
    let flush = EventWrite::cs_partial_flush();
    let acquire = AcquireMem::full_range(boundary_gcr());
    let mut w = Writer::new(out);
    for l in launches {
        let pgm = [split(l.entry >> 8)[0], split(l.entry >> 40)[0]];
        let user = split(l.kernarg);
        w.emit(&SetShReg::new(gfx12::COMPUTE_PGM_LO.dword, &pgm)?)?;
        w.emit(&SetShReg::new(gfx12::COMPUTE_PGM_RSRC1.dword, &l.rsrc[..2])?)?;
        w.emit(&SetShReg::new(gfx12::COMPUTE_PGM_RSRC3.dword, &l.rsrc[2..])?)?;
        w.emit(&SetShReg::new(gfx12::COMPUTE_NUM_THREAD_X.dword, &l.block)?)?;
        w.emit(&SetShReg::new(gfx12::COMPUTE_USER_DATA_0.dword, &user)?)?;
        w.emit(&DispatchDirect::new(l.grid[0], l.grid[1], l.grid[2], DispatchInitiator::typical(l.wave32)))?;
        w.emit(&flush)?;
        w.emit(&acquire)?;
    }
    Ok(w.finish())
}

fn bench(c: &mut Criterion) {
    let launches = launches();
    let mut out = vec![0u32; DISPATCHES * 64];
    let dwords = encode(&launches, &mut out).expect("stream fits");
    let source = out[..dwords].to_vec();
    let mut group = c.benchmark_group("gfx12_1000_dispatches");
    group.throughput(Throughput::Elements(u64::try_from(dwords).unwrap()));
    group.bench_function("encode", |b| {
        b.iter(|| encode(black_box(&launches), black_box(&mut out)).expect("stream fits"));
    });
    group.bench_function("copy", |b| {
        b.iter(|| {
            out[..dwords].copy_from_slice(black_box(&source));
            black_box(&out);
        });
    });
    group.finish();
}

/// The stream is what it says: every packet decodes, eight packets per dispatch.
fn check_stream() {
    let mut out = vec![0u32; DISPATCHES * 64];
    let n = encode(&launches(), &mut out).expect("stream fits");
    let mut packets = 0;
    for p in pm4_encoding::Decoder::new(&out[..n]) {
        p.expect("encoded stream decodes");
        packets += 1;
    }
    assert_eq!(packets, DISPATCHES * 8);
    eprintln!("stream: {n} dwords, {packets} packets, {} dwords per dispatch", n / DISPATCHES);
}

fn benches(c: &mut Criterion) {
    check_stream();
    bench(c);
}

criterion_group!(encode_benches, benches);
criterion_main!(encode_benches);
