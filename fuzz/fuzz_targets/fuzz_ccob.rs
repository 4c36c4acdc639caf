//! Compressed offload bundles: header, payload length of v1, streaming prefix reads as the
//! header-only walk does them, full decompression under a 16 MiB ceiling, the same output read
//! in pieces with its hash (as the streamed walk reads it), and a round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocpack_offload::bundle;
use rocpack_offload::ccob::{self, CcobHeader, Method, Stream};

const CEILING: u64 = 16 << 20;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = CcobHeader::parse(data) {
        if let Some(total) = h.total_size {
            assert!(total >= h.header_size && total <= data.len() as u64);
        }
        let payload = h.payload(data);
        let _ = h.method.name();
        let _ = ccob::v1_payload_len(&h, data, CEILING);
        let _ = ccob::check_frame_size(&h, data);
        let _ = ccob::check_ceiling(&h, CEILING);

        // Prefix reads, as Walker::ccob_headers does: a header chunk, a skip, an entry prefix.
        let limit = h.uncompressed_size.min(CEILING);
        if let Ok(mut s) = Stream::new(h.method, payload, limit) {
            let mut head = [0u8; 64];
            if let Ok(n) = s.read_full(&mut head) {
                assert!(n <= head.len());
                let _ = bundle::parse(&head[..n], false);
                if s.skip_to(s.position().saturating_add(8192)).is_ok() {
                    if let Ok(v) = s.read_vec(4096) {
                        assert!(v.len() <= 4096);
                    }
                }
            }
        }

        if let Ok(out) = ccob::decompress(&h, data, CEILING) {
            assert_eq!(out.len() as u64, h.uncompressed_size);
            let _ = bundle::parse(&out, true);
            // Read, skipped and appended in pieces with the hash on, as the streamed walk
            // reads a bundle: the same bytes, and the hash of the whole.
            let len = out.len() as u64;
            let third = len / 3;
            if let Ok(mut s) = Stream::new(h.method, payload, h.uncompressed_size) {
                s.hash_output();
                let mut buf = Vec::new();
                assert!(s.read_append(&mut buf, third).expect("first third"));
                assert!(s.skip_until(2 * third).expect("skip"));
                assert!(s.read_append(&mut buf, len - third).expect("rest"));
                assert_eq!(buf[..third as usize], out[..third as usize]);
                assert_eq!(buf[third as usize..], out[2 * third as usize..]);
                assert!(!s.skip_until(len + 1).expect("end"));
                assert_eq!(s.position(), len);
                assert_eq!(s.output_hash(), Some(ccob::hash(&out)));
            }
        }
    }

    // Round trip: whatever we write, we read back.
    if data.len() <= 4096 {
        let version = 1 + u16::from(data.first().copied().unwrap_or(0) % 3);
        let method = if data.len() % 2 == 0 {
            Method::Zstd
        } else {
            Method::Zlib
        };
        let blob = ccob::compress(data, version, method, 1).expect("compress");
        let h = CcobHeader::parse(&blob).expect("own header");
        assert_eq!(h.hash, ccob::hash(data));
        assert_eq!(
            ccob::decompress(&h, &blob, CEILING).expect("own payload"),
            data
        );
    }
});
