//! MD5 (RFC 1321), the hash a CCOB header stores: one stream at a time ([`Md5`]), or many
//! streams at once ([`digest_each`]).
//!
//! MD5 cannot be split: each 64-byte block depends on the state the previous one left, and one
//! block is 64 dependent steps, so a single stream runs at the latency of those steps: about
//! 0.7 GB/s on this project's 2.6 GHz machine, as fast as the `md-5` crate. Independent streams
//! do not wait for each other: [`digest_each`] runs [`LANES`] of them as the lanes of one
//! computation, which the compiler turns into SIMD instructions (two SSE2 registers per value
//! on x86-64's baseline, no `unsafe` and no run-time CPU detection), about 1.4 GB/s per core in
//! all. (`cargo run --release -p rocpack-offload --example md5_speed` measures both.) A rewrite
//! compresses many bundles and needs each one's hash: it hashes them in lanes.

use std::io;

/// Streams hashed together by [`digest_each`].
pub const LANES: usize = 8;

/// The state of `N` streams: the four words of each, lane by lane.
type State<const N: usize> = [[u32; N]; 4];

const INIT: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

/// RFC 1321's table T: `floor(abs(sin(i + 1)) * 2^32)`.
const K: [u32; 64] = [
    0xd76a_a478,
    0xe8c7_b756,
    0x2420_70db,
    0xc1bd_ceee,
    0xf57c_0faf,
    0x4787_c62a,
    0xa830_4613,
    0xfd46_9501,
    0x6980_98d8,
    0x8b44_f7af,
    0xffff_5bb1,
    0x895c_d7be,
    0x6b90_1122,
    0xfd98_7193,
    0xa679_438e,
    0x49b4_0821,
    0xf61e_2562,
    0xc040_b340,
    0x265e_5a51,
    0xe9b6_c7aa,
    0xd62f_105d,
    0x0244_1453,
    0xd8a1_e681,
    0xe7d3_fbc8,
    0x21e1_cde6,
    0xc337_07d6,
    0xf4d5_0d87,
    0x455a_14ed,
    0xa9e3_e905,
    0xfcef_a3f8,
    0x676f_02d9,
    0x8d2a_4c8a,
    0xfffa_3942,
    0x8771_f681,
    0x6d9d_6122,
    0xfde5_380c,
    0xa4be_ea44,
    0x4bde_cfa9,
    0xf6bb_4b60,
    0xbebf_bc70,
    0x289b_7ec6,
    0xeaa1_27fa,
    0xd4ef_3085,
    0x0488_1d05,
    0xd9d4_d039,
    0xe6db_99e5,
    0x1fa2_7cf8,
    0xc4ac_5665,
    0xf429_2244,
    0x432a_ff97,
    0xab94_23a7,
    0xfc93_a039,
    0x655b_59c3,
    0x8f0c_cc92,
    0xffef_f47d,
    0x8584_5dd1,
    0x6fa8_7e4f,
    0xfe2c_e6e0,
    0xa301_4314,
    0x4e08_11a1,
    0xf753_7e82,
    0xbd3a_f235,
    0x2ad7_d2bb,
    0xeb86_d391,
];

/// The rotation of each step.
const S: [u32; 64] = [
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9,
    14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15,
    21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
];

/// The message word each step adds.
#[allow(clippy::indexing_slicing)] // `i < 64`, the array's length
const W: [usize; 64] = {
    let mut w = [0; 64];
    let mut i = 0;
    while i < 64 {
        w[i] = match i / 16 {
            0 => i,
            1 => (5 * i + 1) % 16,
            2 => (3 * i + 5) % 16,
            _ => (7 * i) % 16,
        };
        i += 1;
    }
    w
};

/// One 64-byte block of each of `N` streams, as the message words `m[word][lane]`. The steps
/// run as a loop over lanes that the compiler vectorises (one stream alone is faster through
/// [`compress_one_block`]).
#[inline(always)]
// Lane loops over fixed arrays are what vectorises. Every index is a loop counter below the
// array's length, or `W[i] & 15`.
#[allow(clippy::needless_range_loop, clippy::indexing_slicing)]
fn compress<const N: usize>(state: &mut State<N>, m: &[[u32; N]; 16]) {
    let [mut a, mut b, mut c, mut d] = *state;
    for i in 0..64 {
        let mut t = [0u32; N];
        for l in 0..N {
            t[l] = a[l]
                .wrapping_add(f(i / 16, b[l], c[l], d[l]))
                .wrapping_add(K[i].wrapping_add(m[W[i] & 15][l]));
        }
        for l in 0..N {
            a[l] = d[l];
            d[l] = c[l];
            c[l] = b[l];
            b[l] = b[l].wrapping_add(t[l].rotate_left(S[i]));
        }
    }
    for l in 0..N {
        state[0][l] = state[0][l].wrapping_add(a[l]);
        state[1][l] = state[1][l].wrapping_add(b[l]);
        state[2][l] = state[2][l].wrapping_add(c[l]);
        state[3][l] = state[3][l].wrapping_add(d[l]);
    }
}

/// The round function of round `round` (0 to 3).
#[inline(always)]
fn f(round: usize, b: u32, c: u32, d: u32) -> u32 {
    match round {
        0 => d ^ (b & (c ^ d)),
        1 => (b & d).wrapping_add(c & !d),
        2 => b ^ c ^ d,
        _ => c ^ (b | !d),
    }
}

/// One step: `a = b + ((a + f(b, c, d) + K[I] + m[W[I]]) <<< S[I])`.
#[inline(always)]
#[allow(clippy::indexing_slicing)] // `I < 64`, checked when compiled; `W[I] & 15`
fn step<const I: usize>(a: &mut u32, b: u32, c: u32, d: u32, m: &[u32; 16]) {
    // `a + K + m` does not wait for the step before: only `f` does.
    let t = a
        .wrapping_add(K[I].wrapping_add(m[W[I] & 15]))
        .wrapping_add(f(I / 16, b, c, d));
    *a = b.wrapping_add(t.rotate_left(S[I]));
}

/// One 64-byte block of one stream, unrolled: the words' roles turn instead of values moving
/// between steps.
#[inline(always)]
fn compress_one_block(state: &mut [u32; 4], m: &[u32; 16]) {
    let [mut a, mut b, mut c, mut d] = *state;
    macro_rules! quads {
        ($($i:literal)*) => {$(
            step::<{ 4 * $i }>(&mut a, b, c, d, m);
            step::<{ 4 * $i + 1 }>(&mut d, a, b, c, m);
            step::<{ 4 * $i + 2 }>(&mut c, d, a, b, m);
            step::<{ 4 * $i + 3 }>(&mut b, c, d, a, m);
        )*};
    }
    quads!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    for (s, v) in state.iter_mut().zip([a, b, c, d]) {
        *s = s.wrapping_add(v);
    }
}

/// The message words of a 64-byte block.
#[allow(clippy::indexing_slicing)] // `at + 3 < 64`
fn words(block: &[u8; 64]) -> [u32; 16] {
    std::array::from_fn(|w| {
        let at = 4 * w;
        u32::from_le_bytes([block[at], block[at + 1], block[at + 2], block[at + 3]])
    })
}

/// Hashes whole blocks of one stream.
fn compress_one(state: &mut [u32; 4], blocks: &[u8]) {
    for block in blocks.chunks_exact(64) {
        if let Ok(block) = <&[u8; 64]>::try_from(block) {
            compress_one_block(state, &words(block));
        }
    }
}

/// Ends a stream of `len` bytes whose last `tail` (fewer than 64) are not yet hashed.
fn finish(mut state: [u32; 4], tail: &[u8], len: u64) -> [u8; 16] {
    debug_assert!(tail.len() < 64, "a whole block left unhashed");
    // The tail, 0x80, zeros, and the length in bits in the last 8 bytes of one or two blocks.
    let mut last = [0u8; 128];
    let tail = tail.get(..tail.len().min(63)).unwrap_or_default();
    let (body, rest) = last.split_at_mut(tail.len());
    body.copy_from_slice(tail);
    if let Some(b) = rest.first_mut() {
        *b = 0x80;
    }
    let blocks = if tail.len() < 56 { 64 } else { 128 };
    if let Some(bits) = last.get_mut(blocks - 8..blocks) {
        bits.copy_from_slice(&len.wrapping_mul(8).to_le_bytes());
    }
    compress_one(&mut state, last.get(..blocks).unwrap_or_default());
    let mut out = [0u8; 16];
    for (o, v) in out.chunks_exact_mut(4).zip(state) {
        o.copy_from_slice(&v.to_le_bytes());
    }
    out
}

/// MD5 of one stream, fed in pieces of any size.
#[derive(Clone, Debug)]
pub struct Md5 {
    state: [u32; 4],
    pending: [u8; 64],
    pending_len: usize,
    len: u64,
}

impl Default for Md5 {
    fn default() -> Self {
        Md5 {
            state: INIT,
            pending: [0; 64],
            pending_len: 0,
            len: 0,
        }
    }
}

impl Md5 {
    /// Adds the next piece.
    pub fn update(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u64);
        if self.pending_len > 0 {
            let take = (64 - self.pending_len).min(data.len());
            let (head, rest) = data.split_at(take);
            if let Some(room) = self
                .pending
                .get_mut(self.pending_len..self.pending_len + take)
            {
                room.copy_from_slice(head);
            }
            self.pending_len += take;
            data = rest;
            if self.pending_len < 64 {
                return;
            }
            compress_one(&mut self.state, &self.pending);
            self.pending_len = 0;
        }
        let whole = data.len() - data.len() % 64;
        let (blocks, tail) = data.split_at(whole);
        compress_one(&mut self.state, blocks);
        if let Some(room) = self.pending.get_mut(..tail.len()) {
            room.copy_from_slice(tail);
        }
        self.pending_len = tail.len();
    }

    /// The digest of everything added.
    pub fn finalize(self) -> [u8; 16] {
        let pending = self.pending.get(..self.pending_len).unwrap_or_default();
        finish(self.state, pending, self.len)
    }
}

/// How many bytes a lane asks its source for at a time.
const LANE_BUFFER: usize = 256 << 10;

/// A stream being hashed in a lane.
struct Lane<F> {
    index: usize,
    source: F,
    state: [u32; 4],
    buf: Box<[u8]>,
    /// Read and not yet hashed: `buf[start..end]`.
    start: usize,
    end: usize,
    len: u64,
    ended: bool,
}

impl<F: FnMut(&mut [u8]) -> io::Result<usize>> Lane<F> {
    fn new(index: usize, source: F) -> Self {
        Lane {
            index,
            source,
            state: INIT,
            buf: vec![0; LANE_BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
            len: 0,
            ended: false,
        }
    }

    /// Reads until at least one whole block is buffered or the source ends.
    fn fill(&mut self) -> io::Result<()> {
        if self.end - self.start >= 64 || self.ended {
            return Ok(());
        }
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        while self.end < 64 && !self.ended {
            let room = self.buf.get_mut(self.end..).unwrap_or_default();
            let n = (self.source)(room)?.min(room.len());
            self.end += n;
            self.len += n as u64;
            self.ended = n == 0;
        }
        Ok(())
    }

    /// Whole blocks buffered.
    fn blocks(&self) -> usize {
        (self.end - self.start) / 64
    }

    fn unhashed(&self) -> &[u8] {
        self.buf.get(self.start..self.end).unwrap_or_default()
    }

    /// Hashes what is left alone, as an [`Md5`] from where the lane left it.
    fn finish_alone(mut self) -> io::Result<[u8; 16]> {
        let unhashed = self.end - self.start;
        let mut md5 = Md5 {
            state: self.state,
            len: self.len - unhashed as u64,
            ..Md5::default()
        };
        md5.update(self.unhashed());
        while !self.ended {
            let n = (self.source)(&mut self.buf)?.min(self.buf.len());
            md5.update(self.buf.get(..n).unwrap_or_default());
            self.ended = n == 0;
        }
        Ok(md5.finalize())
    }
}

/// The MD5 digest of each source, in the sources' order. A source fills the buffer it is given
/// with its next bytes and returns how many; 0 ends it. The sources are hashed [`LANES`] at a
/// time, each lane taking the next source when its own ends; give them largest first, so that
/// the lanes end together. When only a few remain, they are finished one at a time (a lane's
/// share of the vector computation is slower than one stream alone).
///
/// # Errors
/// The first error a source returns.
pub fn digest_each<F>(sources: impl IntoIterator<Item = F>) -> io::Result<Vec<[u8; 16]>>
where
    F: FnMut(&mut [u8]) -> io::Result<usize>,
{
    let mut queue = sources.into_iter().fuse().enumerate();
    let mut digests: Vec<(usize, [u8; 16])> = Vec::new();
    let mut lanes: [Option<Lane<F>>; LANES] = std::array::from_fn(|_| None);
    let zero = [0u8; 64];
    loop {
        // Fill the lanes; end the streams that have ended.
        for slot in &mut lanes {
            loop {
                if slot.is_none() {
                    *slot = queue.next().map(|(i, f)| Lane::new(i, f));
                }
                let Some(lane) = slot.as_mut() else { break };
                lane.fill()?;
                if lane.blocks() > 0 {
                    break;
                }
                if let Some(lane) = slot.take() {
                    digests.push((lane.index, finish(lane.state, lane.unhashed(), lane.len)));
                }
            }
        }
        let busy = lanes.iter().filter(|l| l.is_some()).count();
        if busy <= 3 {
            // The queue is empty: what remains is faster one stream at a time.
            for lane in lanes.iter_mut().filter_map(Option::take) {
                let index = lane.index;
                digests.push((index, lane.finish_alone()?));
            }
            break;
        }
        let run = lanes.iter().flatten().map(Lane::blocks).min().unwrap_or(0);
        let mut state: State<LANES> = [[0; LANES]; 4];
        for (l, lane) in lanes.iter().enumerate() {
            if let Some(lane) = lane {
                for (s, v) in state.iter_mut().zip(lane.state) {
                    if let Some(s) = s.get_mut(l) {
                        *s = v;
                    }
                }
            }
        }
        for k in 0..run {
            let mut m = [[0u32; LANES]; 16];
            for (l, lane) in lanes.iter().enumerate() {
                let block = lane
                    .as_ref()
                    .and_then(|lane| lane.unhashed().get(64 * k..)?.first_chunk::<64>())
                    .unwrap_or(&zero);
                for (row, v) in m.iter_mut().zip(words(block)) {
                    if let Some(x) = row.get_mut(l) {
                        *x = v;
                    }
                }
            }
            compress::<LANES>(&mut state, &m);
        }
        for (l, lane) in lanes.iter_mut().enumerate() {
            if let Some(lane) = lane {
                lane.state = state.map(|s| s.get(l).copied().unwrap_or_default());
                lane.start += 64 * run;
            }
        }
    }
    digests.sort_by_key(|(i, _)| *i);
    Ok(digests.into_iter().map(|(_, d)| d).collect())
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use md5_reference::Digest;

    fn hex(d: [u8; 16]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn one(data: &[u8]) -> [u8; 16] {
        let mut h = Md5::default();
        h.update(data);
        h.finalize()
    }

    /// RFC 1321, appendix A.5.
    #[test]
    fn the_rfc_test_suite() {
        for (input, want) in [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                "abcdefghijklmnopqrstuvwxyz",
                "c3fcd3d76192e4007dfb496cca67e13b",
            ),
            (
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                "d174ab98d277d9f5a5611c2c9f419d9f",
            ),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ] {
            assert_eq!(hex(one(input.as_bytes())), want, "{input:?}");
            let each = digest_each([input.as_bytes()].map(|b| {
                let mut at = 0;
                move |buf: &mut [u8]| {
                    let n = (b.len() - at).min(buf.len());
                    buf[..n].copy_from_slice(&b[at..at + n]);
                    at += n;
                    Ok(n)
                }
            }))
            .unwrap();
            assert_eq!(hex(each[0]), want, "{input:?}");
        }
    }

    fn noise(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// Every length around the padding's edges and the lanes' buffer, fed in pieces of odd
    /// sizes: the same digests as the `md-5` crate's.
    #[test]
    fn agrees_with_the_md5_crate_at_every_edge() {
        let lens: Vec<usize> = (0..130)
            .chain([183, 1000, 4095, 4096, 4097, 65_536 + 55, 65_536 + 56])
            .chain([
                LANE_BUFFER - 1,
                LANE_BUFFER,
                LANE_BUFFER + 1,
                3 * LANE_BUFFER + 70,
            ])
            .collect();
        let inputs: Vec<Vec<u8>> = lens.iter().map(|&l| noise(l, l as u64 + 7)).collect();
        let reference: Vec<[u8; 16]> = inputs
            .iter()
            .map(|d| md5_reference::Md5::digest(d).into())
            .collect();
        for (d, want) in inputs.iter().zip(&reference) {
            assert_eq!(one(d), *want, "one piece of {}", d.len());
            let mut h = Md5::default();
            for piece in d.chunks(37) {
                h.update(piece);
            }
            assert_eq!(h.finalize(), *want, "pieces of {}", d.len());
        }
        // All at once, in lanes, with sources that give short reads of varying sizes.
        for step in [1usize, 63, 64, 65, 4096, usize::MAX] {
            let sources = inputs.iter().enumerate().map(|(i, d)| {
                let mut at = 0;
                move |buf: &mut [u8]| {
                    let n = (d.len() - at).min(buf.len()).min(step.max(i % 7 + 1));
                    buf[..n].copy_from_slice(&d[at..at + n]);
                    at += n;
                    Ok(n)
                }
            });
            assert_eq!(digest_each(sources).unwrap(), reference, "reads of {step}");
        }
    }

    #[test]
    fn a_source_error_is_returned() {
        let sources = (0..12).map(|i| {
            let mut calls = 0;
            move |buf: &mut [u8]| {
                calls += 1;
                if i == 9 && calls == 3 {
                    return Err(io::Error::other("disk on fire"));
                }
                let n = buf.len().min(if calls < 5 { 1000 } else { 0 });
                buf[..n].fill(i as u8);
                Ok(n)
            }
        });
        let e = digest_each(sources).unwrap_err();
        assert_eq!(e.to_string(), "disk on fire");
        assert!(
            digest_each(std::iter::empty::<fn(&mut [u8]) -> io::Result<usize>>())
                .unwrap()
                .is_empty()
        );
    }
}
