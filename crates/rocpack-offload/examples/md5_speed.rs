//! Throughput of the project's MD5 (`rocpack_offload::md5`): one stream, the `md-5` crate on the
//! same stream (the reference the tests compare against), and 32 streams through
//! `digest_each`'s lanes, on one thread, from memory.
//!
//! `cargo run --release -p rocpack-offload --example md5_speed [MIB_PER_STREAM]` (default 16)

use md5_reference::Digest;
use std::time::Instant;

fn main() -> std::io::Result<()> {
    let mib: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(16);
    let len = mib << 20;
    let streams: Vec<Vec<u8>> = (0..32u32)
        .map(|s| {
            (0..len)
                .map(|j| ((j as u32).wrapping_mul(2_654_435_761) >> (s % 7)) as u8)
                .collect()
        })
        .collect();
    let first = streams.first().map(Vec::as_slice).unwrap_or_default();
    let rate = |bytes: usize, t: Instant| bytes as f64 / t.elapsed().as_secs_f64() / 1e6;

    let t = Instant::now();
    let mut h = rocpack_offload::md5::Md5::default();
    h.update(first);
    let ours = h.finalize();
    println!(
        "one stream, rocpack_offload::md5::Md5: {:.0} MB/s",
        rate(len, t)
    );

    let t = Instant::now();
    let reference: [u8; 16] = md5_reference::Md5::digest(first).into();
    println!(
        "one stream, md-5:                      {:.0} MB/s",
        rate(len, t)
    );
    assert_eq!(ours, reference, "the two disagree");

    let t = Instant::now();
    let sources = streams.iter().map(|d| {
        let mut at = 0;
        move |buf: &mut [u8]| {
            let n = (d.len() - at).min(buf.len());
            if let (Some(to), Some(from)) = (buf.get_mut(..n), d.get(at..at + n)) {
                to.copy_from_slice(from);
            }
            at += n;
            Ok(n)
        }
    });
    let each = rocpack_offload::md5::digest_each(sources)?;
    println!(
        "32 streams, digest_each (lanes):       {:.0} MB/s",
        rate(streams.len() * len, t)
    );
    assert_eq!(each.first(), Some(&reference), "the lanes disagree");
    Ok(())
}
