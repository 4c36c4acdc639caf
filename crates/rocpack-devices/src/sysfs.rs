//! Reading sysfs attribute files: `key value` property lists and single values.
//!
//! Every failure names the file, and the line where there is one. sysfs attributes are at most a
//! page long; a larger file is not one, so reads stop at [`MAX_ATTRIBUTE`] and say so.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::Error;

/// Largest file accepted as a sysfs attribute (the kernel's are at most one page, 4 KiB).
pub(crate) const MAX_ATTRIBUTE: u64 = 64 * 1024;

/// Reads a small text file. `Ok(None)` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, Error> {
    read_capped(path, MAX_ATTRIBUTE)
}

/// Reads a text file of at most `limit` bytes. `Ok(None)` when it does not exist.
pub(crate) fn read_capped(path: &Path, limit: u64) -> Result<Option<String>, Error> {
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(Error::TooLarge {
            path: path.to_owned(),
            limit,
        });
    }
    String::from_utf8(bytes).map(Some).map_err(|e| {
        // Name the line of the first bad byte so a hand-edited fixture is quick to fix.
        let valid = e.utf8_error().valid_up_to();
        let line = e
            .as_bytes()
            .get(..valid)
            .map_or(1, |b| b.iter().filter(|&&c| c == b'\n').count() + 1);
        Error::Malformed {
            path: path.to_owned(),
            line,
            message: "not UTF-8 text".into(),
        }
    })
}

/// Reads a file that must exist.
pub(crate) fn read_required(path: &Path) -> Result<String, Error> {
    read_optional(path)?.ok_or_else(|| Error::Io {
        path: path.to_owned(),
        source: std::io::ErrorKind::NotFound.into(),
    })
}

/// A parsed `key value` attribute such as a KFD node's `properties`.
#[derive(Debug, Clone)]
pub(crate) struct Properties {
    path: PathBuf,
    /// (key, value, 1-based line)
    entries: Vec<(String, u64, usize)>,
}

impl Properties {
    /// Parses KFD's `"%s %u\n"` / `"%s %llu\n"` lines. Blank lines are skipped; every other line
    /// must be a name and a decimal number, and a name may appear once.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Self, Error> {
        let mut entries: Vec<(String, u64, usize)> = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let mut fields = raw.split_ascii_whitespace();
            let (Some(key), value) = (fields.next(), fields.next()) else {
                continue;
            };
            let malformed = |message: String| Error::Malformed {
                path: path.to_owned(),
                line,
                message,
            };
            let Some(value) = value else {
                return Err(malformed(format!("`{key}` has no value")));
            };
            if fields.next().is_some() {
                return Err(malformed(format!("expected `name value`, found {raw:?}")));
            }
            let value: u64 = value
                .parse()
                .map_err(|_| malformed(format!("`{key}` is {value:?}, not an unsigned decimal")))?;
            if let Some((_, _, first)) = entries.iter().find(|(k, _, _)| k == key) {
                return Err(malformed(format!(
                    "`{key}` appears again (first on line {first})"
                )));
            }
            entries.push((key.to_owned(), value, line));
        }
        Ok(Properties {
            path: path.to_owned(),
            entries,
        })
    }

    pub(crate) fn read(path: &Path) -> Result<Self, Error> {
        let text = read_required(path)?;
        Self::parse(path, &text)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn get(&self, key: &str) -> Option<u64> {
        self.entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|&(_, v, _)| v)
    }

    /// The value as a `u32`; a larger value is an error naming its line.
    pub(crate) fn get_u32(&self, key: &str) -> Result<Option<u32>, Error> {
        let Some((_, value, line)) = self.entries.iter().find(|(k, _, _)| k == key) else {
            return Ok(None);
        };
        u32::try_from(*value)
            .map(Some)
            .map_err(|_| Error::Malformed {
                path: self.path.clone(),
                line: *line,
                message: format!("`{key}` is {value}, larger than the kernel's 32-bit field"),
            })
    }

    /// The line a key is on, for diagnostics.
    pub(crate) fn line_of(&self, key: &str) -> Option<usize> {
        self.entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|&(_, _, l)| l)
    }
}

/// Parses a one-line hexadecimal sysfs value such as PCI `vendor` (`0x1002\n`).
pub(crate) fn parse_hex(path: &Path, text: &str) -> Result<u64, Error> {
    let trimmed = text.trim();
    let digits = trimmed
        .strip_prefix("0x")
        .or_else(|| trimmed.strip_prefix("0X"))
        .unwrap_or(trimmed);
    u64::from_str_radix(digits, 16).map_err(|_| Error::Malformed {
        path: path.to_owned(),
        line: 1,
        message: format!("expected a hexadecimal number such as 0x1002, found {trimmed:?}"),
    })
}

/// Parses a one-line decimal sysfs value (`generation_id`, `gpu_id`, module parameters).
pub(crate) fn parse_dec<T: std::str::FromStr>(path: &Path, text: &str) -> Result<T, Error> {
    let trimmed = text.trim();
    trimmed.parse().map_err(|_| Error::Malformed {
        path: path.to_owned(),
        line: 1,
        message: format!("expected a decimal number, found {trimmed:?}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kfd_properties() {
        let p = Properties::parse(
            Path::new("p"),
            "cpu_cores_count 0\nsimd_count 192\n\nunique_id 11673270660693242239\n",
        )
        .unwrap();
        assert_eq!(p.get("simd_count"), Some(192));
        assert_eq!(p.get("unique_id"), Some(11673270660693242239));
        assert_eq!(p.line_of("unique_id"), Some(4));
        assert_eq!(p.get("missing"), None);
    }

    #[test]
    fn malformed_lines_name_the_line() {
        for (text, line) in [
            ("simd_count 4\ngfx_target_version -1\n", 2),
            ("simd_count\n", 1),
            ("a 1\nb 2 3\n", 2),
            ("a 1\na 2\n", 2),
        ] {
            match Properties::parse(Path::new("x/properties"), text) {
                Err(Error::Malformed { line: l, .. }) => assert_eq!(l, line, "{text:?}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
        let p = Properties::parse(Path::new("p"), "simd_count 4294967296\n").unwrap();
        assert!(matches!(
            p.get_u32("simd_count"),
            Err(Error::Malformed { line: 1, .. })
        ));
    }

    #[test]
    fn hex_and_decimal_values() {
        assert_eq!(parse_hex(Path::new("v"), "0x1002\n").unwrap(), 0x1002);
        assert!(parse_hex(Path::new("v"), "amd\n").is_err());
        assert_eq!(parse_dec::<i32>(Path::new("n"), "-1\n").unwrap(), -1);
    }
}
