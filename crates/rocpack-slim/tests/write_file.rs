//! `write_file`, the atomic write every generated file goes through (reports, plans, manual
//! pages, extracted code objects): on a real filesystem, the content, the permissions kept, and
//! no temporary left beside it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;

use rocpack_slim::write::write_file;

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_new_file_is_written_and_nothing_else_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("report.html");
    assert_eq!(write_file(&dest, b"<html>one</html>").unwrap(), None);
    assert_eq!(std::fs::read(&dest).unwrap(), b"<html>one</html>");
    assert_eq!(names(dir.path()), ["report.html"]);
    // The mode a plain create gives (0o666 less the umask): never more than 0o666.
    let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode & !0o666, 0, "{mode:o}");
    assert_ne!(mode & 0o600, 0, "{mode:o}");
}

#[test]
fn a_replaced_file_keeps_its_permissions_and_readers_of_the_old_one_keep_it() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("plan.cmake");
    std::fs::write(&dest, b"old content").unwrap();
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o640)).unwrap();
    let old = std::fs::File::open(&dest).unwrap();
    write_file(&dest, b"new").unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"new");
    let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
    // Renamed over, not written in place: an open reader still sees the old file whole.
    let mut buf = String::new();
    std::io::Read::read_to_string(&mut &old, &mut buf).unwrap();
    assert_eq!(buf, "old content");
    assert_eq!(names(dir.path()), ["plan.cmake"]);
}

#[test]
fn a_failed_write_leaves_the_destination_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    // The destination's directory is a file: nothing can be created there.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    assert!(write_file(&blocker.join("out.txt"), b"data").is_err());
    // A destination that is a directory: the rename fails, the directory stays, no temporary.
    let target = dir.path().join("taken");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("inside"), b"kept").unwrap();
    assert!(write_file(&target, b"data").is_err());
    assert_eq!(std::fs::read(target.join("inside")).unwrap(), b"kept");
    assert_eq!(names(dir.path()), ["not-a-dir", "taken"]);
}

#[test]
fn setuid_setgid_and_sticky_bits_are_not_copied_onto_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("planted");
    std::fs::write(&dest, b"old").unwrap();
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o7755)).unwrap();
    write_file(&dest, b"new").unwrap();
    let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o755);
}

#[test]
fn a_stale_temporary_with_this_process_id_is_replaced_and_a_long_name_works() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("page.1");
    // What a killed run with the same process ID would have left: nobody holds it.
    let stale = rocpack_scan::own::temp_name(&dest, std::process::id());
    std::fs::write(&stale, b"stale").unwrap();
    write_file(&dest, b"page").unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"page");
    assert_eq!(names(dir.path()), ["page.1"]);
    // A name of 250 bytes: its temporary's name is cut to fit.
    let long = dir.path().join("x".repeat(250));
    write_file(&long, b"long").unwrap();
    assert_eq!(std::fs::read(&long).unwrap(), b"long");
    assert_eq!(names(dir.path()).len(), 2);
}

/// `stage`: files written and verified before they have a name; those committed appear with
/// their bytes and the kept permissions, those dropped leave nothing, in either order.
#[test]
fn staged_files_appear_only_when_committed_and_leave_nothing_when_dropped() {
    use rocpack_slim::write::stage;
    let dir = tempfile::tempdir().unwrap();
    // Larger than the piece it is written and compared in, and not a multiple of it.
    let big: Vec<u8> = (0..(3 << 20) + 12_345).map(|i| (i % 251) as u8).collect();
    let a = stage(dir.path(), &big).unwrap();
    let b = stage(dir.path(), b"displaced").unwrap();
    let c = stage(dir.path(), b"").unwrap();
    // Staged files are unnamed (or hidden temporaries): nothing is in the directory yet.
    assert!(names(dir.path()).iter().all(|n| n.starts_with('.')));
    drop(b);
    let kept = dir.path().join("kept.co");
    std::fs::write(&kept, b"old").unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(a.commit(&kept).unwrap(), None);
    assert_eq!(c.commit(&dir.path().join("empty.co")).unwrap(), None);
    assert!(std::fs::read(&kept).unwrap() == big);
    assert_eq!(std::fs::read(dir.path().join("empty.co")).unwrap(), b"");
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
    assert_eq!(names(dir.path()), ["empty.co", "kept.co"]);
    // A commit that cannot rename (the destination is a directory) removes the staged file.
    let taken = dir.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    assert!(stage(dir.path(), b"x").unwrap().commit(&taken).is_err());
    assert_eq!(names(dir.path()), ["empty.co", "kept.co", "taken"]);
    // A directory that takes no file: staging fails, leaving nothing.
    assert!(stage(&dir.path().join("kept.co"), b"x").is_err());
}
