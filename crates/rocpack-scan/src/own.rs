//! rocpack's own files in a tree: the temporary files a rewrite writes next to the file it
//! replaces (`.NAME.rocpack-PID.tmp`, see `rocpack_slim::write`). One place names them and
//! recognises them, so that the writer, its stale-file sweep and every directory walk agree.

use std::path::{Path, PathBuf};

/// Longest part of the destination's name kept in a temporary name: with `.`, `.rocpack-PID.tmp`
/// it stays under the 255 bytes a file name may have.
const MAX_NAME_PART: usize = 200;

/// The temporary name a rewrite of `dest` by process `pid` uses. A very long name is cut (at a
/// character boundary), so that the temporary can be created where the destination can.
pub fn temp_name(dest: &Path, pid: u32) -> PathBuf {
    let mut name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.len() > MAX_NAME_PART {
        let mut cut = MAX_NAME_PART;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
    }
    dest.with_file_name(format!(".{name}.rocpack-{pid}.tmp"))
}

/// The process ID in a temporary name made by [`temp_name`], if `file_name` is one.
pub fn temp_pid(file_name: &str) -> Option<u32> {
    file_name
        .strip_prefix('.')
        .and_then(|r| r.strip_suffix(".tmp"))
        .and_then(|r| r.rsplit_once(".rocpack-"))
        .filter(|(name, _)| !name.is_empty())
        .and_then(|(_, p)| p.parse::<u32>().ok())
}

/// Whether `path` names a rocpack temporary file: a rewrite in progress, or one a killed run
/// left. Its bytes are not a library: directory walks skip it.
pub fn is_temp(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(temp_pid)
        .is_some()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_long_name_is_cut_and_still_recognised() {
        let long = "é".repeat(120); // 240 bytes
        let t = temp_name(&Path::new("/x").join(&long), 7);
        let name = t.file_name().unwrap().to_str().unwrap();
        assert!(name.len() <= 255, "{}", name.len());
        assert!(is_temp(&t));
        assert_eq!(temp_pid(name), Some(7));
    }

    #[test]
    fn names_round_trip_and_nothing_else_matches() {
        let t = temp_name(Path::new("/x/lib/librocblas.so.4"), 4242);
        assert_eq!(t, Path::new("/x/lib/.librocblas.so.4.rocpack-4242.tmp"));
        assert_eq!(
            temp_pid(&t.file_name().unwrap().to_string_lossy()),
            Some(4242)
        );
        assert!(is_temp(&t));
        for other in [
            "librocblas.so.4",
            ".librocblas.so.4.rocpack-x.tmp",
            "librocblas.so.4.rocpack-1.tmp",
            "..rocpack-1.tmp",
            ".a.rocpack-1.tmp.orig",
        ] {
            assert!(!is_temp(Path::new(other)), "{other}");
        }
    }
}
