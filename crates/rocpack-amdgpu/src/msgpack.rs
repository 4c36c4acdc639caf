//! A zero-copy MessagePack reader for AMDGPU metadata notes.
//!
//! Ours rather than `rmpv`: metadata comes from untrusted files, and a decoder that reserves
//! memory for the element count a header claims can be made to allocate gigabytes from a few
//! bytes. This one allocates nothing: [`decode`] validates the whole document in one pass
//! (bounded nesting, every length checked against the input), and the [`Value`] it returns
//! reads maps and arrays lazily from the input bytes. Big ROCm libraries carry metadata for
//! hundreds of thousands of kernels, so building a tree per document was the dominant cost.

use std::borrow::Cow;

use rocpack_bytes::{Bytes, lossless_string};

const MAX_DEPTH: u32 = 64;

/// A value borrowed from a validated document.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// nil
    Nil,
    /// true / false
    Bool(bool),
    /// Any integer (covers u64 and i64).
    Int(i128),
    /// float32 / float64
    Float(f64),
    /// A string's raw bytes (normally UTF-8).
    Str(&'a [u8]),
    /// Binary or extension data: only its length is kept.
    Bin(u64),
    /// An array of `len` values.
    Array(Seq<'a>),
    /// A map of `len` key/value pairs.
    Map(Seq<'a>),
}

/// The elements of an array or map, read lazily.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seq<'a> {
    data: &'a [u8],
    start: u64,
    /// Number of elements (pairs, for a map).
    pub len: u64,
}

impl<'a> Seq<'a> {
    fn values(&self, per_item: u64) -> Values<'a> {
        Values {
            r: Reader {
                b: Bytes::new(self.data),
                pos: self.start,
            },
            left: self.len.saturating_mul(per_item),
        }
    }
}

/// Iterator over the values of a validated sequence.
pub struct Values<'a> {
    r: Reader<'a>,
    left: u64,
}

impl<'a> Iterator for Values<'a> {
    type Item = Value<'a>;
    fn next(&mut self) -> Option<Value<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The document was validated by `decode`, so this cannot fail; stop if it does.
        self.r.value(0).ok()
    }
}

impl<'a> Value<'a> {
    /// Looks a string key up in a map.
    pub fn get(&self, key: &str) -> Option<Value<'a>> {
        let Value::Map(seq) = self else { return None };
        let mut it = seq.values(2);
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            if k == Value::Str(key.as_bytes()) {
                return Some(v);
            }
        }
        None
    }

    /// The value as an unsigned integer.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    }

    /// The value as text; invalid UTF-8 becomes `\xNN` escapes.
    pub fn as_str(&self) -> Option<Cow<'a, str>> {
        match self {
            Value::Str(b) => Some(match std::str::from_utf8(b) {
                Ok(s) => Cow::Borrowed(s),
                Err(_) => Cow::Owned(lossless_string(b)),
            }),
            _ => None,
        }
    }

    /// The value as a boolean (integers 0/1 too, as LLVM writes some flags that way).
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            Value::Int(0) => Some(false),
            Value::Int(1) => Some(true),
            _ => None,
        }
    }

    /// The key/value pairs of a map, in document order.
    pub fn as_map(&self) -> Option<impl Iterator<Item = (Value<'a>, Value<'a>)> + 'a> {
        match self {
            Value::Map(seq) => {
                let mut it = seq.values(2);
                Some(std::iter::from_fn(move || Some((it.next()?, it.next()?))))
            }
            _ => None,
        }
    }

    /// The elements of an array.
    pub fn as_array(&self) -> Option<Values<'a>> {
        match self {
            Value::Array(seq) => Some(seq.values(1)),
            _ => None,
        }
    }
}

/// Why a MessagePack document could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("msgpack: {what} at offset {offset}")]
pub struct DecodeError {
    /// What went wrong.
    pub what: &'static str,
    /// Offset in the document.
    pub offset: u64,
}

/// Validates the value at the start of `data` and returns it; trailing bytes (note padding)
/// are ignored.
///
/// # Errors
/// [`DecodeError`] for truncated input, reserved type bytes or nesting deeper than 64.
pub fn decode(data: &[u8]) -> Result<Value<'_>, DecodeError> {
    Cursor::new(data).value(0)
}

/// A one-pass reader for decoders that want only part of a large document: it validates
/// everything it passes over exactly as [`decode`] does (same nesting limit, same errors at
/// the same offsets), but lets the caller step into a map or array instead of reading it as a
/// whole, so the document is walked once rather than once to validate and again to read.
///
/// `depth` is the nesting level of the value being read (0 for the document itself): the
/// caller says how deep it is, as [`decode`] counts it.
pub struct Cursor<'a> {
    r: Reader<'a>,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Cursor {
            r: Reader {
                b: Bytes::new(data),
                pos: 0,
            },
        }
    }

    /// Reads (and validates) the whole next value.
    ///
    /// # Errors
    /// [`DecodeError`] as for [`decode`].
    pub fn value(&mut self, depth: u32) -> Result<Value<'a>, DecodeError> {
        self.r.value(depth)
    }

    /// If the next value is a map, reads only its header and returns its number of pairs,
    /// leaving the cursor at its first key; otherwise reads the whole value and returns `None`.
    ///
    /// # Errors
    /// [`DecodeError`] as for [`decode`].
    pub fn map_head(&mut self, depth: u32) -> Result<Option<u64>, DecodeError> {
        match self.r.head(depth)? {
            Head::Map(n) => Ok(Some(n)),
            head => self.r.finish(head, depth).map(|_| None),
        }
    }

    /// As [`Cursor::map_head`], for an array: its number of elements.
    ///
    /// # Errors
    /// [`DecodeError`] as for [`decode`].
    pub fn array_head(&mut self, depth: u32) -> Result<Option<u64>, DecodeError> {
        match self.r.head(depth)? {
            Head::Array(n) => Ok(Some(n)),
            head => self.r.finish(head, depth).map(|_| None),
        }
    }
}

/// What [`Reader::head`] read: a complete scalar, or the header of a collection whose elements
/// follow.
enum Head<'a> {
    Scalar(Value<'a>),
    Array(u64),
    Map(u64),
}

struct Reader<'a> {
    b: Bytes<'a>,
    pos: u64,
}

impl<'a> Reader<'a> {
    fn err(&self, what: &'static str) -> DecodeError {
        DecodeError {
            what,
            offset: self.pos,
        }
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], DecodeError> {
        let s = self
            .b
            .read_at(self.pos, n)
            .map_err(|_| self.err("truncated value"))?;
        self.pos += n;
        Ok(s)
    }

    fn uint(&mut self, n: u64) -> Result<u64, DecodeError> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    /// Reads one value; for arrays and maps, checks and skips their contents.
    fn value(&mut self, depth: u32) -> Result<Value<'a>, DecodeError> {
        let head = self.head(depth)?;
        self.finish(head, depth)
    }

    /// Completes a value whose head was read: a collection's elements are checked and skipped.
    fn finish(&mut self, head: Head<'a>, depth: u32) -> Result<Value<'a>, DecodeError> {
        Ok(match head {
            Head::Scalar(v) => v,
            Head::Array(n) => Value::Array(self.elements(n, 1, depth)?),
            Head::Map(n) => Value::Map(self.elements(n, 2, depth)?),
        })
    }

    /// Reads a scalar whole, or only the header of an array or map (after checking that the
    /// rest of the input can hold as many elements as it claims).
    fn head(&mut self, depth: u32) -> Result<Head<'a>, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting deeper than 64"));
        }
        let tag = self.uint(1)? as u8;
        Ok(Head::Scalar(match tag {
            0x00..=0x7f => Value::Int(i128::from(tag)),
            0x80..=0x8f => return self.collection(u64::from(tag & 0x0f), 2),
            0x90..=0x9f => return self.collection(u64::from(tag & 0x0f), 1),
            0xa0..=0xbf => Value::Str(self.take(u64::from(tag & 0x1f))?),
            0xc0 => Value::Nil,
            0xc1 => return Err(self.err("reserved type byte 0xc1")),
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4..=0xc6 => {
                let n = self.uint(1 << (tag - 0xc4))?;
                self.take(n)?;
                Value::Bin(n)
            }
            0xc7..=0xc9 => {
                let n = self.uint(1 << (tag - 0xc7))?;
                self.take(n.saturating_add(1))?;
                Value::Bin(n)
            }
            0xca => Value::Float(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => Value::Float(f64::from_bits(self.uint(8)?)),
            0xcc..=0xcf => Value::Int(i128::from(self.uint(1 << (tag - 0xcc))?)),
            0xd0..=0xd3 => {
                let n = 1u32 << (tag - 0xd0);
                let raw = self.uint(u64::from(n))?;
                let shift = 64 - 8 * n;
                Value::Int(i128::from(((raw << shift) as i64) >> shift))
            }
            0xd4..=0xd8 => {
                let n = 1u64 << (tag - 0xd4);
                self.take(1 + n)?;
                Value::Bin(n)
            }
            0xd9..=0xdb => {
                let n = self.uint(1 << (tag - 0xd9))?;
                Value::Str(self.take(n)?)
            }
            0xdc | 0xdd => {
                let n = self.uint(if tag == 0xdc { 2 } else { 4 })?;
                return self.collection(n, 1);
            }
            0xde | 0xdf => {
                let n = self.uint(if tag == 0xde { 2 } else { 4 })?;
                return self.collection(n, 2);
            }
            0xe0..=0xff => Value::Int(i128::from(tag as i8)),
        }))
    }

    /// Checks and passes over one value: what [`Reader::value`] does, with the same errors at
    /// the same offsets, without building values (most of a metadata document is skipped
    /// kernel arguments, so this is the decoder's inner loop).
    fn skip(&mut self, depth: u32) -> Result<(), DecodeError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting deeper than 64"));
        }
        let tag = self.uint(1)? as u8;
        let payload = match tag {
            0x00..=0x7f | 0xc0 | 0xc2 | 0xc3 | 0xe0..=0xff => 0,
            0x80..=0x8f => return self.skip_elements(u64::from(tag & 0x0f), 2, depth),
            0x90..=0x9f => return self.skip_elements(u64::from(tag & 0x0f), 1, depth),
            0xa0..=0xbf => u64::from(tag & 0x1f),
            0xc1 => return Err(self.err("reserved type byte 0xc1")),
            0xc4..=0xc6 => self.uint(1 << (tag - 0xc4))?,
            0xc7..=0xc9 => self.uint(1 << (tag - 0xc7))?.saturating_add(1),
            0xca => 4,
            0xcb => 8,
            0xcc..=0xcf => 1 << (tag - 0xcc),
            0xd0..=0xd3 => 1 << (tag - 0xd0),
            0xd4..=0xd8 => 1 + (1 << (tag - 0xd4)),
            0xd9..=0xdb => self.uint(1 << (tag - 0xd9))?,
            0xdc | 0xdd => {
                let n = self.uint(if tag == 0xdc { 2 } else { 4 })?;
                return self.skip_elements(n, 1, depth);
            }
            0xde | 0xdf => {
                let n = self.uint(if tag == 0xde { 2 } else { 4 })?;
                return self.skip_elements(n, 2, depth);
            }
        };
        self.take(payload).map(|_| ())
    }

    fn skip_elements(&mut self, len: u64, per_item: u64, depth: u32) -> Result<(), DecodeError> {
        self.collection(len, per_item)?;
        for _ in 0..len.saturating_mul(per_item) {
            self.skip(depth + 1)?;
        }
        Ok(())
    }

    fn collection(&mut self, len: u64, per_item: u64) -> Result<Head<'a>, DecodeError> {
        // Every element takes at least one byte: a count the input cannot hold fails here,
        // before any work proportional to it.
        if len.saturating_mul(per_item) > self.b.len().saturating_sub(self.pos) {
            return Err(self.err("collection length exceeds the document"));
        }
        Ok(if per_item == 2 {
            Head::Map(len)
        } else {
            Head::Array(len)
        })
    }

    /// Checks and skips the `len` elements of a collection whose header was just read.
    fn elements(&mut self, len: u64, per_item: u64, depth: u32) -> Result<Seq<'a>, DecodeError> {
        let start = self.pos;
        for _ in 0..len.saturating_mul(per_item) {
            self.skip(depth + 1)?;
        }
        Ok(Seq {
            data: self.b.as_slice(),
            start,
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_scalars_and_collections() {
        // {"a": [1, -1, 300, "x", true, nil]}
        let doc = b"\x81\xa1a\x96\x01\xff\xcd\x01\x2c\xa1x\xc3\xc0";
        let v = decode(doc).unwrap();
        let a: Vec<Value<'_>> = v.get("a").unwrap().as_array().unwrap().collect();
        assert_eq!(a[0], Value::Int(1));
        assert_eq!(a[1], Value::Int(-1));
        assert_eq!(a[2].as_u64(), Some(300));
        assert_eq!(a[3].as_str().as_deref(), Some("x"));
        assert_eq!(a[4].as_bool(), Some(true));
        assert_eq!(a[5], Value::Nil);
        assert_eq!(v.get("b"), None);
        assert_eq!(decode(b"\xd0\x80").unwrap(), Value::Int(-128));
        assert_eq!(decode(b"\xd1\xff\xfe").unwrap(), Value::Int(-2));
    }

    #[test]
    fn huge_claimed_counts_fail_without_work() {
        assert!(decode(b"\xdd\xff\xff\xff\xff").is_err());
        assert!(decode(b"\xdf\xff\xff\xff\xff\x01").is_err());
        assert!(decode(b"\xdb\xff\xff\xff\xffab").is_err());
        assert!(decode(b"\xc9\xff\xff\xff\xff\x01").is_err());
    }

    #[test]
    fn skipping_checks_exactly_what_reading_checks() {
        // One value of every type byte, nested; then every truncation and corruption of it.
        let mut doc = vec![0xdc, 0x00, 0x0c];
        doc.extend_from_slice(b"\x81\xa1k\x92\xc0\xc3");
        doc.extend_from_slice(b"\xc4\x02ab\xc7\x01\x05z\xca\0\0\0\0\xcb\0\0\0\0\0\0\0\0");
        doc.extend_from_slice(b"\xcd\x01\x02\xd2\xff\xff\xff\xfe\xd5\x01ab\xd9\x02hi");
        doc.extend_from_slice(b"\xde\x00\x01\x01\xe0\x7f");
        let mut cases: Vec<Vec<u8>> = (0..=doc.len()).map(|n| doc[..n].to_vec()).collect();
        for i in 0..doc.len() {
            for b in 0..=255u8 {
                let mut d = doc.clone();
                d[i] = b;
                cases.push(d);
            }
        }
        cases.push(vec![0x91; 100]);
        for d in cases {
            let mut a = Reader {
                b: Bytes::new(&d),
                pos: 0,
            };
            let mut b = Reader {
                b: Bytes::new(&d),
                pos: 0,
            };
            let read = a.head(0).and_then(|h| a.finish(h, 0)).map(|_| a.pos);
            let skipped = b.skip(0).map(|_| b.pos);
            assert_eq!(read, skipped, "document {d:02x?}");
        }
    }

    #[test]
    fn deep_nesting_is_refused() {
        let doc = vec![0x91u8; 10_000];
        assert_eq!(decode(&doc).unwrap_err().what, "nesting deeper than 64");
    }

    #[test]
    fn invalid_utf8_is_kept_losslessly() {
        assert_eq!(
            decode(b"\xa2\xffa").unwrap().as_str().as_deref(),
            Some("\\xffa")
        );
    }
}
