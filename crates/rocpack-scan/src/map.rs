//! Read-only memory maps: the one place in rocpack that needs `unsafe`.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::Path;

/// A file's bytes, mapped read-only (or empty for an empty file).
pub struct Mapped {
    map: Option<memmap2::Mmap>,
}

impl Mapped {
    /// Maps `path` read-only, advising the kernel that access is random so that reading a few
    /// headers of a large library does not read ahead through gigabytes.
    ///
    /// # Errors
    /// The I/O error of opening or mapping the file.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        Self::from_file(&file)
    }

    /// Maps an open file.
    ///
    /// # Errors
    /// The I/O error of mapping it.
    pub fn from_file(file: &File) -> io::Result<Self> {
        Self::map(file, memmap2::Advice::Random)
    }

    /// Maps an open file that will be read from start to end (a package being streamed),
    /// so the kernel reads ahead.
    ///
    /// # Errors
    /// The I/O error of mapping it.
    pub fn from_file_sequential(file: &File) -> io::Result<Self> {
        Self::map(file, memmap2::Advice::Sequential)
    }

    fn map(file: &File, advice: memmap2::Advice) -> io::Result<Self> {
        let len = file.metadata()?.len();
        if len == 0 {
            return Ok(Mapped { map: None });
        }
        let len = usize::try_from(len).map_err(io::Error::other)?;
        // Safety: the map is read-only and private. If another process truncates or rewrites
        // the file while it is mapped, reads may see changed bytes or fault (SIGBUS); every
        // parser treats the bytes as untrusted, so changed bytes are handled like any
        // malformed input. Truncation under a running inspection is outside what rocpack can
        // defend against without copying every file, as every mmap-based reader is.
        // The length is given so that memmap2 does not ask the kernel for it a second time.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(file)? };
        let _ = map.advise(advice);
        Ok(Mapped { map: Some(map) })
    }
}

impl Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}
