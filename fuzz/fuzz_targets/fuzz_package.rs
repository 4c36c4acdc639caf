//! The package readers (rocpack-scan's package.rs): a `.deb` (ar holding `data.tar.*`), a zip
//! (wheels) and a tar stream, each with every compression, read in place from the fuzzed bytes.
//! The reader takes a path, so the bytes go to a temporary file first. Never panic, and every
//! member result names the package.
#![no_main]

use std::sync::atomic::AtomicUsize;

use libfuzzer_sys::fuzz_target;
use rocpack_scan::ScanOptions;
use rocpack_scan::package::{Compression, PackageKind, read_package, split_member_path};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let kinds = [
        (PackageKind::Deb, "x.deb"),
        (PackageKind::Zip, "x.whl"),
        (PackageKind::Tar(Compression::None), "x.tar"),
        (PackageKind::Tar(Compression::Gzip), "x.tar.gz"),
        (PackageKind::Tar(Compression::Xz), "x.tar.xz"),
        (PackageKind::Tar(Compression::Zstd), "x.tar.zst"),
    ];
    let (kind, name) = kinds[usize::from(selector) % kinds.len()];
    let dir = std::env::temp_dir().join(format!("rocpack-fuzz-package-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(name);
    if std::fs::write(&path, bytes).is_err() {
        return;
    }
    // Small ceilings keep one input's work bounded, as --max-member would.
    let opts = ScanOptions {
        max_member: 64 << 20,
        max_decompressed: 64 << 20,
        ..ScanOptions::default()
    };
    let examined = AtomicUsize::new(0);
    for r in read_package(&path, kind, &opts, &|_| {}, &examined) {
        // PACKAGE!/MEMBER, or the package itself for an error about the whole of it.
        match split_member_path(&r.path) {
            Some((package, _)) => assert_eq!(package, path),
            None => assert_eq!(r.path, path),
        }
    }
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir(&dir);
});
