//! `stage` when file descriptors run short: alone in its test binary, because it lowers this
//! process's limit on open files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rocpack_slim::write::{RESERVED_FDS, stage};
use rustix::process::{Resource, getrlimit, setrlimit};

/// Staged files hold a descriptor each while the soft limit leaves `RESERVED_FDS` beside them;
/// past that, the bytes are held in memory, and committing writes the same file either way.
#[test]
fn past_the_descriptor_budget_staged_bytes_are_held_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut limit = getrlimit(Resource::Nofile);
    let open_now = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    // Room for three staged files.
    limit.current = Some(RESERVED_FDS + 3);
    assert!(
        open_now < RESERVED_FDS,
        "{open_now} descriptors open already"
    );
    setrlimit(Resource::Nofile, limit).unwrap();
    let bytes = |i: usize| format!("entry {i}").repeat(1000 * (i + 1)).into_bytes();
    let mut staged: Vec<_> = (0..5)
        .map(|i| stage(dir.path(), &bytes(i)).unwrap())
        .collect();
    let in_memory: Vec<bool> = staged.iter().map(|s| s.in_memory()).collect();
    assert_eq!(in_memory, [false, false, false, true, true]);
    // A staged file that goes gives its descriptor back.
    drop(staged.remove(0));
    let again = stage(dir.path(), &bytes(0)).unwrap();
    assert!(!again.in_memory());
    staged.insert(0, again);
    for (i, s) in staged.into_iter().enumerate() {
        let dest = dir.path().join(format!("{i}.co"));
        s.commit(&dest).unwrap();
        assert!(std::fs::read(&dest).unwrap() == bytes(i), "{i}.co");
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["0.co", "1.co", "2.co", "3.co", "4.co"]);
}
