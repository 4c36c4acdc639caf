//! `ar` archives, read through the `object` crate: static libraries and thin archives (the
//! inspection walk) and Debian packages (rocpack-scan's package reader) use this one reader.
//!
//! Only member headers are read while iterating; a member's data is the caller's to read, and a
//! member whose header claims more bytes than the archive holds is still given, with its claim,
//! so that what it does hold can be read and the truncation reported.

use object::read::archive::ArchiveFile;
use rocpack_bytes::lossless_string;

use crate::error::{FormatError, Kind};

/// One member, as its header describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its name (GNU and BSD long names resolved), lossless.
    pub name: String,
    /// Offset of its data in the archive (for a thin member: where its header ends).
    pub offset: u64,
    /// The size its header claims.
    pub size: u64,
    /// A thin archive's member: its data lives in another file named by `name`.
    pub thin: bool,
}

impl Member {
    /// Its data in `archive`, cut to what the archive holds.
    pub fn data<'d>(&self, archive: &'d [u8]) -> &'d [u8] {
        rocpack_bytes::Bytes::new(archive).read_at_most(self.offset, self.size)
    }

    /// Whether the archive holds all the bytes its header claims.
    pub fn complete(&self, archive_len: u64) -> bool {
        self.offset
            .checked_add(self.size)
            .is_some_and(|end| end <= archive_len)
    }
}

/// The members of the archive in `data`, one at a time.
pub struct Members<'d> {
    inner: object::read::archive::ArchiveMemberIterator<'d, &'d [u8]>,
    /// Where the next header should start: the end of the last member's data, padded.
    next: u64,
    thin: bool,
    done: bool,
}

/// Reads the archive header of `data`.
///
/// # Errors
/// [`FormatError`] (kind `archive`) when `data` is not an `ar` archive or its symbol or name
/// table is malformed.
pub fn members(data: &[u8]) -> Result<Members<'_>, FormatError> {
    let archive =
        ArchiveFile::parse(data).map_err(|e| FormatError::new(Kind::Archive, 0, e.to_string()))?;
    Ok(Members {
        thin: archive.is_thin(),
        inner: archive.members(),
        next: 8,
        done: false,
    })
}

impl Iterator for Members<'_> {
    /// A member, or the error of a header that does not parse, at the offset where it should
    /// start (after which nothing more is given).
    type Item = Result<Member, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.inner.next()? {
            Ok(m) => {
                let (offset, size) = m.file_range();
                if !self.thin {
                    self.next = offset.saturating_add(size).saturating_add(size & 1);
                }
                Some(Ok(Member {
                    name: lossless_string(m.name()),
                    offset,
                    size,
                    thin: m.is_thin(),
                }))
            }
            Err(e) => {
                self.done = true;
                let at = if self.thin { 0 } else { self.next };
                Some(Err(FormatError::new(
                    Kind::Archive,
                    at,
                    format!("member header at offset {at:#x}: {e}"),
                )))
            }
        }
    }
}

/// Reads `data` as an archive and asserts what the reader promises for any input: no member
/// after an error, a member's data never longer than its claim, and complete exactly when the
/// archive holds its claim. For the fuzz target `fuzz_archive` and the unit tests; it panics on
/// a broken promise, which is its purpose.
#[doc(hidden)]
#[allow(clippy::panic)]
pub fn check_invariants(data: &[u8]) {
    let Ok(members) = members(data) else { return };
    let mut failed = false;
    for m in members {
        assert!(!failed, "a member after the error");
        match m {
            Ok(m) => {
                let bytes = m.data(data);
                assert!(bytes.len() as u64 <= m.size);
                if !m.thin {
                    assert_eq!(m.complete(data.len() as u64), bytes.len() as u64 == m.size);
                }
            }
            // Its offset may lie past the end: where a member that claims too much ends.
            Err(_) => failed = true,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn header(name: &str, size: u64) -> Vec<u8> {
        format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644).into_bytes()
    }

    #[test]
    fn members_with_their_claims_and_where_a_bad_header_starts() {
        let mut a = b"!<arch>\n".to_vec();
        a.extend(header("debian-binary", 4));
        a.extend(b"2.0\n");
        a.extend(header("data.tar.xz", 3));
        a.extend(b"xyz\n"); // padded to even
        a.extend(b"garbage that is no header at all, sixty bytes of it.........");
        let got: Vec<_> = members(&a).unwrap().collect();
        let m0 = got[0].as_ref().unwrap();
        assert_eq!(
            (m0.name.as_str(), m0.offset, m0.size),
            ("debian-binary", 68, 4)
        );
        let m1 = got[1].as_ref().unwrap();
        assert_eq!(
            (m1.name.as_str(), m1.offset, m1.size),
            ("data.tar.xz", 132, 3)
        );
        assert_eq!(m1.data(&a), b"xyz");
        let e = got[2].as_ref().unwrap_err();
        assert_eq!(e.offset, 136, "{e}");
        assert_eq!(got.len(), 3);
        assert!(members(b"not ar").is_err());
    }

    /// The fuzz target's invariants (fuzz/fuzz_targets/fuzz_archive.rs) over every truncation
    /// and every single-byte change of a small archive: no panic, nothing after an error, data
    /// never longer than claimed nor past the archive.
    #[test]
    fn every_truncation_and_byte_flip_keeps_the_invariants() {
        let mut a = b"!<arch>\n".to_vec();
        a.extend(header("debian-binary", 4));
        a.extend(b"2.0\n");
        a.extend(header("data.tar.xz", 3));
        a.extend(b"xyz\n");
        for cut in 0..=a.len() {
            check_invariants(&a[..cut]);
        }
        for i in 0..a.len() {
            for v in [0u8, b'0', b'9', b' ', b'/', 0xff] {
                let mut b = a.clone();
                b[i] = v;
                check_invariants(&b);
            }
        }
    }

    #[test]
    fn a_claim_past_the_end_keeps_what_is_there() {
        let mut a = b"!<arch>\n".to_vec();
        a.extend(header("debian-binary", 999_999));
        a.extend(b"2.0\n");
        let m = members(&a).unwrap().next().unwrap().unwrap();
        assert_eq!((m.offset, m.size), (68, 999_999));
        assert_eq!(m.data(&a), b"2.0\n");
        assert!(!m.complete(a.len() as u64));
    }
}
