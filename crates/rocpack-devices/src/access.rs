//! Can this process open `/dev/kfd` and a render node read-write?
//!
//! This mirrors Gentoo's `check_amdgpu` (`eclass/rocm.eclass`), which requires every one of
//! `/dev/kfd` and `/dev/dri/render*` to be readable and writable and otherwise says "Cannot read
//! or write `<device>`! Make sure it is present and check the permission. By default render group
//! have access to it." ROCm needs the same: libhsakmt opens `/dev/kfd` and each GPU's render node
//! `O_RDWR`.
//!
//! The answer comes from actually opening the node read-write and closing it again (harmless for
//! these device files, though it can wake a runtime-suspended GPU for a moment), because ACLs such
//! as systemd-logind's `uaccess` grant access that the mode bits do not show. The mode bits, the
//! owning group and the process's groups are reported beside it to explain a refusal;
//! [`mode_allows_rw`] is that explanation as a pure function, tested without real devices.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Whether a device node can be opened read-write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AccessStatus {
    Ok,
    Missing,
    PermissionDenied,
    /// Opening failed for another reason (the message is in `detail`).
    Error,
}

/// The group that owns a device node, and whether the user is in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OwnerGroup {
    pub gid: u32,
    /// From `/etc/group`.
    pub name: Option<String>,
    /// This process has the group (effective or supplementary, `/proc/self/status`).
    pub process_in_group: bool,
    /// `/etc/group` lists the user as a member (may differ until the next login).
    pub listed_in_group: bool,
}

/// The result of checking one device node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeAccess {
    #[serde(serialize_with = "crate::ser_path")]
    pub path: PathBuf,
    pub status: AccessStatus,
    /// Permission bits (`0o660`), when the node exists.
    pub mode: Option<u32>,
    pub group: Option<OwnerGroup>,
    /// What to do about a refusal, or why an open succeeded against the mode bits.
    pub detail: Option<String>,
}

/// Who this process is, as far as file permissions go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
    /// The user's name (`/etc/passwd`), to find it in `/etc/group` member lists.
    pub user: Option<String>,
    /// `/etc/group`: gid -> (name, members).
    pub group_db: BTreeMap<u32, (String, Vec<String>)>,
}

impl Identity {
    /// This process: effective IDs and groups from `/proc/self/status`, names from `/etc/passwd`
    /// and `/etc/group`. Unreadable files leave the fields empty.
    pub fn current() -> Identity {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        Identity::from_files(
            &read("/proc/self/status"),
            &read("/etc/passwd"),
            &read("/etc/group"),
        )
    }

    /// Builds an identity from the text of `/proc/<pid>/status`, `/etc/passwd` and `/etc/group`.
    pub fn from_files(status: &str, passwd: &str, group: &str) -> Identity {
        let mut id = Identity::default();
        for line in status.lines() {
            let field = |name: &str| {
                line.strip_prefix(name)
                    .map(|rest| rest.split_ascii_whitespace().collect::<Vec<_>>())
            };
            // "Uid:\treal\teffective\tsaved\tfs": permission checks use the fs/effective ID.
            if let Some(f) = field("Uid:") {
                id.uid = f.get(1).and_then(|v| v.parse().ok()).unwrap_or(id.uid);
            } else if let Some(f) = field("Gid:") {
                id.gid = f.get(1).and_then(|v| v.parse().ok()).unwrap_or(id.gid);
            } else if let Some(f) = field("Groups:") {
                id.groups = f.iter().filter_map(|g| g.parse().ok()).collect();
            }
        }
        id.user = passwd.lines().find_map(|l| {
            let mut parts = l.split(':');
            let name = parts.next()?;
            let uid: u32 = parts.nth(1)?.parse().ok()?;
            (uid == id.uid).then(|| name.to_owned())
        });
        for l in group.lines() {
            let mut parts = l.split(':');
            let (Some(name), Some(_), Some(gid), members) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let Ok(gid) = gid.parse() else { continue };
            let members = members
                .unwrap_or("")
                .split(',')
                .filter(|m| !m.is_empty())
                .map(str::to_owned)
                .collect();
            id.group_db.entry(gid).or_insert((name.to_owned(), members));
        }
        id
    }

    fn has_group(&self, gid: u32) -> bool {
        self.gid == gid || self.groups.contains(&gid)
    }

    fn listed_in(&self, gid: u32) -> bool {
        self.group_db.get(&gid).is_some_and(|(_, members)| {
            self.user
                .as_ref()
                .is_some_and(|u| members.iter().any(|m| m == u))
        })
    }
}

/// Whether classic permission bits let `id` read and write a node with `mode`, owner `uid` and
/// group `gid` (root always may). ACLs are not considered.
pub fn mode_allows_rw(mode: u32, uid: u32, gid: u32, id: &Identity) -> bool {
    if id.uid == 0 {
        return true;
    }
    let bits = if id.uid == uid {
        mode >> 6
    } else if id.has_group(gid) {
        mode >> 3
    } else {
        mode
    };
    bits & 0o6 == 0o6
}

/// Checks one node: open it read-write, then explain the outcome.
pub fn check(path: &Path, id: &Identity) -> NodeAccess {
    let meta = std::fs::metadata(path);
    let (mode, owner, group) = match &meta {
        Ok(m) => (
            Some(m.mode() & 0o7777),
            Some(m.uid()),
            Some(OwnerGroup {
                gid: m.gid(),
                name: id.group_db.get(&m.gid()).map(|(n, _)| n.clone()),
                process_in_group: id.has_group(m.gid()),
                listed_in_group: id.listed_in(m.gid()),
            }),
        ),
        Err(_) => (None, None, None),
    };
    let opened = OpenOptions::new().read(true).write(true).open(path);
    let (status, error) = match opened {
        Ok(_) => (AccessStatus::Ok, None),
        Err(e) => match e.kind() {
            std::io::ErrorKind::NotFound => (AccessStatus::Missing, None),
            std::io::ErrorKind::PermissionDenied => (AccessStatus::PermissionDenied, None),
            _ => (AccessStatus::Error, Some(e.to_string())),
        },
    };
    let predicted = match (mode, owner, &group) {
        (Some(m), Some(u), Some(g)) => Some(mode_allows_rw(m, u, g.gid, id)),
        _ => None,
    };
    let detail = explain(path, status, error, predicted, group.as_ref(), id);
    NodeAccess {
        path: path.to_owned(),
        status,
        mode,
        group,
        detail,
    }
}

/// The advice for an outcome, following Gentoo's check_amdgpu wording where it applies.
pub fn explain(
    path: &Path,
    status: AccessStatus,
    error: Option<String>,
    predicted: Option<bool>,
    group: Option<&OwnerGroup>,
    id: &Identity,
) -> Option<String> {
    let p = path.display();
    let gname = group.map(|g| g.name.clone().unwrap_or_else(|| format!("gid {}", g.gid)));
    match status {
        AccessStatus::Ok if id.uid == 0 => Some("opened read-write as root".into()),
        AccessStatus::Ok if predicted == Some(false) => Some(
            "opened read-write although the mode bits do not allow it: an ACL grants access (for example systemd-logind's uaccess for the active seat), which may not hold in other sessions".into(),
        ),
        AccessStatus::Ok => None,
        AccessStatus::Missing => Some(format!(
            "{p} does not exist: make sure it is present (amdgpu loaded, and in a container the device passed through)"
        )),
        AccessStatus::Error => Some(format!(
            "cannot open {p} read-write: {}",
            error.unwrap_or_default()
        )),
        AccessStatus::PermissionDenied => {
            let mut s = format!("cannot read or write {p}: check the permission");
            match (group, gname) {
                (Some(g), Some(name)) if g.listed_in_group && !g.process_in_group => s.push_str(&format!(
                    "; /etc/group lists you in {name}, which owns it, but this process does not have the group yet: log out and back in (or use newgrp {name})"
                )),
                (Some(g), Some(name)) if !g.process_in_group => s.push_str(&format!(
                    "; it belongs to group {name} and you are not in it: add the user to it (usermod -aG {name} $USER, for ROCm usually render and video) and log in again"
                )),
                (Some(_), Some(name)) => s.push_str(&format!(
                    "; you are in its group {name} but the group may not read and write it (mode bits), or a security module refuses"
                )),
                _ => s.push_str("; by default the render group has access to it"),
            }
            Some(s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Name:\tcat\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nGroups:\t4 24 27 1000 \n";
    const PASSWD: &str =
        "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\n";
    const GROUP: &str = "root:x:0:\nvideo:x:44:alice\nrender:x:110:alice\nalice:x:1000:\n";

    #[test]
    fn identity_from_proc_and_etc() {
        let id = Identity::from_files(STATUS, PASSWD, GROUP);
        assert_eq!((id.uid, id.gid), (1000, 1000));
        assert_eq!(id.groups, vec![4, 24, 27, 1000]);
        assert_eq!(id.user.as_deref(), Some("alice"));
        assert!(id.listed_in(110) && !id.has_group(110));
    }

    #[test]
    fn mode_bits_decide_like_the_kernel() {
        let id = Identity::from_files(STATUS, PASSWD, GROUP);
        assert!(mode_allows_rw(0o600, 1000, 0, &id));
        assert!(!mode_allows_rw(0o000, 1000, 1000, &id));
        assert!(
            !mode_allows_rw(0o660, 0, 110, &id),
            "render not in this process"
        );
        assert!(mode_allows_rw(0o660, 0, 27, &id));
        assert!(mode_allows_rw(0o666, 0, 110, &id));
        // Owner bits win even when the group bits would allow it.
        assert!(!mode_allows_rw(0o060, 1000, 1000, &id));
        let root = Identity::default();
        assert!(mode_allows_rw(0o000, 5, 5, &root));
    }

    #[test]
    fn refusal_advice_names_the_group() {
        let id = Identity::from_files(STATUS, PASSWD, GROUP);
        let g = OwnerGroup {
            gid: 110,
            name: Some("render".into()),
            process_in_group: false,
            listed_in_group: true,
        };
        let s = explain(
            Path::new("/dev/kfd"),
            AccessStatus::PermissionDenied,
            None,
            Some(false),
            Some(&g),
            &id,
        )
        .unwrap();
        assert!(s.contains("cannot read or write /dev/kfd"), "{s}");
        assert!(s.contains("log out and back in"), "{s}");
        let g = OwnerGroup {
            listed_in_group: false,
            ..g
        };
        let s = explain(
            Path::new("/dev/kfd"),
            AccessStatus::PermissionDenied,
            None,
            Some(false),
            Some(&g),
            &id,
        )
        .unwrap();
        assert!(s.contains("usermod -aG render"), "{s}");
    }
}
