//! Bounds-checked, zero-copy reads from untrusted byte slices.
//!
//! Every parser in rocpack reads file bytes through [`Bytes`]: each read names an offset and a
//! length, all arithmetic is checked, and a read past the end is an [`OutOfBounds`] error that
//! says where it happened instead of a panic.
//!
//! ```
//! use rocpack_bytes::Bytes;
//! let data = Bytes::new(b"CCOB\x02\x00\x01\x00");
//! assert_eq!(data.read_at(0, 4).unwrap(), b"CCOB");
//! assert_eq!(data.u16(4).unwrap(), 2);
//! assert!(data.u32(6).is_err());
//! ```
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::indexing_slicing, clippy::unwrap_used))]

mod budget;
pub use budget::{Budget, Permit, Pick};

/// A read that does not fit in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{len} bytes at offset {offset} run past the end of {size} bytes")]
pub struct OutOfBounds {
    /// Offset of the attempted read, relative to the buffer.
    pub offset: u64,
    /// Length of the attempted read.
    pub len: u64,
    /// Size of the buffer.
    pub size: u64,
}

/// A borrowed byte buffer with checked little-endian reads.
#[derive(Debug, Clone, Copy)]
pub struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    /// Wraps a slice.
    pub fn new(data: &'a [u8]) -> Self {
        Bytes(data)
    }

    /// The whole buffer.
    pub fn as_slice(&self) -> &'a [u8] {
        self.0
    }

    /// Length of the buffer in bytes.
    pub fn len(&self) -> u64 {
        self.0.len() as u64
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `len` bytes at `offset`.
    ///
    /// # Errors
    /// [`OutOfBounds`] when `offset + len` overflows or exceeds the buffer.
    pub fn read_at(&self, offset: u64, len: u64) -> Result<&'a [u8], OutOfBounds> {
        let err = OutOfBounds {
            offset,
            len,
            size: self.len(),
        };
        let end = offset.checked_add(len).ok_or(err)?;
        if end > self.len() {
            return Err(err);
        }
        // Both bounds were checked against the length just above, so they fit in usize.
        self.0.get(offset as usize..end as usize).ok_or(err)
    }

    /// Everything from `offset` to the end.
    ///
    /// # Errors
    /// [`OutOfBounds`] when `offset` is past the end.
    pub fn tail(&self, offset: u64) -> Result<&'a [u8], OutOfBounds> {
        let len = self.len().checked_sub(offset).ok_or(OutOfBounds {
            offset,
            len: 0,
            size: self.len(),
        })?;
        self.read_at(offset, len)
    }

    /// A sub-buffer of `len` bytes at `offset`.
    ///
    /// # Errors
    /// As [`Bytes::read_at`].
    pub fn sub(&self, offset: u64, len: u64) -> Result<Bytes<'a>, OutOfBounds> {
        self.read_at(offset, len).map(Bytes)
    }

    /// Up to `len` bytes at `offset`: fewer when the buffer ends first, empty past the end.
    pub fn read_at_most(&self, offset: u64, len: u64) -> &'a [u8] {
        let avail = self.len().saturating_sub(offset);
        self.read_at(offset.min(self.len()), len.min(avail))
            .unwrap_or(&[])
    }

    /// A fixed-size array at `offset`.
    ///
    /// # Errors
    /// As [`Bytes::read_at`].
    pub fn array<const N: usize>(&self, offset: u64) -> Result<[u8; N], OutOfBounds> {
        let s = self.read_at(offset, N as u64)?;
        let mut out = [0u8; N];
        out.copy_from_slice(s);
        Ok(out)
    }

    /// A byte at `offset`.
    ///
    /// # Errors
    /// As [`Bytes::read_at`].
    pub fn u8(&self, offset: u64) -> Result<u8, OutOfBounds> {
        Ok(self.array::<1>(offset)?[0])
    }

    /// A little-endian `u16` at `offset`.
    ///
    /// # Errors
    /// As [`Bytes::read_at`].
    pub fn u16(&self, offset: u64) -> Result<u16, OutOfBounds> {
        self.array(offset).map(u16::from_le_bytes)
    }

    /// A little-endian `u32` at `offset`.
    ///
    /// # Errors
    /// As [`Bytes::read_at`].
    pub fn u32(&self, offset: u64) -> Result<u32, OutOfBounds> {
        self.array(offset).map(u32::from_le_bytes)
    }

    /// A little-endian `u64` at `offset`.
    ///
    /// # Errors
    /// As [`Bytes::read_at`].
    pub fn u64(&self, offset: u64) -> Result<u64, OutOfBounds> {
        self.array(offset).map(u64::from_le_bytes)
    }

    /// Whether the buffer holds `magic` at `offset`.
    pub fn has_at(&self, offset: u64, magic: &[u8]) -> bool {
        self.read_at(offset, magic.len() as u64)
            .is_ok_and(|s| s == magic)
    }
}

/// `value` rounded up to a multiple of `align` (a power of two or zero); `None` on overflow.
pub fn align_up(value: u64, align: u64) -> Option<u64> {
    if align <= 1 {
        return Some(value);
    }
    let mask = align - 1;
    value.checked_add(mask).map(|v| v & !mask)
}

/// Renders bytes that should be text (IDs, section and member names) losslessly: valid UTF-8
/// as is, every invalid byte as `\xNN`.
pub fn lossless_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_reject_overflowing_ranges() {
        let b = Bytes::new(&[1, 2, 3, 4]);
        assert!(b.read_at(u64::MAX, 2).is_err());
        assert!(b.read_at(2, u64::MAX).is_err());
        assert!(b.read_at(4, 1).is_err());
        assert_eq!(b.read_at(4, 0).unwrap(), b"");
        assert_eq!(b.read_at_most(2, 100), &[3, 4]);
        assert_eq!(b.read_at_most(9, 100), b"");
        assert_eq!(b.tail(1).unwrap(), &[2, 3, 4]);
        assert!(b.tail(5).is_err());
    }

    #[test]
    fn align_up_handles_edges() {
        assert_eq!(align_up(0, 4096), Some(0));
        assert_eq!(align_up(1, 4096), Some(4096));
        assert_eq!(align_up(4096, 4096), Some(4096));
        assert_eq!(align_up(u64::MAX, 8), None);
        assert_eq!(align_up(7, 0), Some(7));
    }

    #[test]
    fn lossless_string_escapes_invalid_bytes() {
        assert_eq!(lossless_string(b"gfx90a\xff:x"), "gfx90a\\xff:x");
    }
}
