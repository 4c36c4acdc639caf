//! A small MessagePack decoder for AMDGPU metadata notes.
//!
//! Ours rather than `rmpv`: metadata comes from untrusted files, and a decoder that reserves
//! memory for the element count a header claims can be made to allocate gigabytes from a few
//! bytes. Here every collection grows only as elements are actually decoded (each takes at
//! least one input byte), and nesting is limited.

use rocpack_bytes::{Bytes, lossless_string};

const MAX_DEPTH: u32 = 64;

/// A decoded MessagePack value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// nil
    Nil,
    /// true / false
    Bool(bool),
    /// Any integer that fits in i128 (covers u64 and i64).
    Int(i128),
    /// float32 / float64
    Float(f64),
    /// A string (invalid UTF-8 kept as `\xNN` escapes).
    Str(String),
    /// Binary or extension data: only its length is kept.
    Bin(u64),
    /// An array.
    Array(Vec<Value>),
    /// A map, in document order.
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// Looks a string key up in a map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find_map(|(k, v)| matches!(k, Value::Str(s) if s == key).then_some(v)),
            _ => None,
        }
    }

    /// The value as an unsigned integer.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    }

    /// The value as a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
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

    /// The value as an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
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

/// Decodes one value from the start of `data`; trailing bytes (note padding) are ignored.
///
/// # Errors
/// [`DecodeError`] for truncated input, reserved type bytes or nesting deeper than 64.
pub fn decode(data: &[u8]) -> Result<Value, DecodeError> {
    let mut d = Decoder {
        b: Bytes::new(data),
        pos: 0,
    };
    d.value(0)
}

struct Decoder<'a> {
    b: Bytes<'a>,
    pos: u64,
}

impl Decoder<'_> {
    fn err(&self, what: &'static str) -> DecodeError {
        DecodeError {
            what,
            offset: self.pos,
        }
    }

    fn take(&mut self, n: u64) -> Result<&[u8], DecodeError> {
        let s = self
            .b
            .read_at(self.pos, n)
            .map_err(|_| self.err("truncated value"))?;
        self.pos += n;
        Ok(s)
    }

    fn uint(&mut self, n: u64) -> Result<u64, DecodeError> {
        let s = self.take(n)?;
        Ok(s.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn value(&mut self, depth: u32) -> Result<Value, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting deeper than 64"));
        }
        let tag = self.uint(1)? as u8;
        Ok(match tag {
            0x00..=0x7f => Value::Int(i128::from(tag)),
            0x80..=0x8f => self.map(u64::from(tag & 0x0f), depth)?,
            0x90..=0x9f => self.array(u64::from(tag & 0x0f), depth)?,
            0xa0..=0xbf => self.str(u64::from(tag & 0x1f))?,
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
                self.take(1 + n)?;
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
                self.str(n)?
            }
            0xdc | 0xdd => {
                let n = self.uint(if tag == 0xdc { 2 } else { 4 })?;
                self.array(n, depth)?
            }
            0xde | 0xdf => {
                let n = self.uint(if tag == 0xde { 2 } else { 4 })?;
                self.map(n, depth)?
            }
            0xe0..=0xff => Value::Int(i128::from(tag as i8)),
        })
    }

    fn str(&mut self, n: u64) -> Result<Value, DecodeError> {
        Ok(Value::Str(lossless_string(self.take(n)?)))
    }

    fn array(&mut self, n: u64, depth: u32) -> Result<Value, DecodeError> {
        // No with_capacity(n): n is a claim, not a fact.
        let mut items = Vec::new();
        for _ in 0..n {
            items.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, n: u64, depth: u32) -> Result<Value, DecodeError> {
        let mut entries = Vec::new();
        for _ in 0..n {
            let k = self.value(depth + 1)?;
            let v = self.value(depth + 1)?;
            entries.push((k, v));
        }
        Ok(Value::Map(entries))
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
        let a = v.get("a").unwrap().as_array().unwrap();
        assert_eq!(a[0], Value::Int(1));
        assert_eq!(a[1], Value::Int(-1));
        assert_eq!(a[2].as_u64(), Some(300));
        assert_eq!(a[3].as_str(), Some("x"));
        assert_eq!(a[4].as_bool(), Some(true));
        assert_eq!(a[5], Value::Nil);
        assert_eq!(decode(b"\xd0\x80").unwrap(), Value::Int(-128));
        assert_eq!(decode(b"\xd1\xff\xfe").unwrap(), Value::Int(-2));
    }

    #[test]
    fn huge_claimed_counts_fail_without_allocating() {
        assert!(decode(b"\xdd\xff\xff\xff\xff").is_err());
        assert!(decode(b"\xdf\xff\xff\xff\xff\x01").is_err());
        assert!(decode(b"\xdb\xff\xff\xff\xffab").is_err());
    }

    #[test]
    fn deep_nesting_is_refused() {
        let doc = vec![0x91u8; 10_000];
        assert_eq!(decode(&doc).unwrap_err().what, "nesting deeper than 64");
    }
}
