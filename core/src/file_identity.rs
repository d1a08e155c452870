//! Which file a path names, and whether it can be reached through another path.
//!
//! Two stores keep their safety in files: SQLite (whose WAL and journal sit beside the path as spelled, so two
//! spellings of one file get two journals) and the static state file (whose lock sits beside it). Both resolve
//! symbolic links first, then refuse a file that has a second name no lock beside one name can see: a hard link,
//! or the file alone mounted somewhere (a container's `-v /host/leases.db:/state/leases.db`).

use std::fs::Metadata;
use std::io;
use std::path::{Path, PathBuf};

/// A file's identity: its device and inode. Two paths name the same file exactly when these are equal.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
}

#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
impl FileId {
    /// The identity of the file `meta` describes.
    #[cfg(unix)]
    pub(crate) fn of(meta: &Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    /// Elsewhere there is no inode to compare: every file looks the same, so no change is ever reported.
    #[cfg(not(unix))]
    pub(crate) fn of(_meta: &Metadata) -> FileId {
        FileId { dev: 0, ino: 0 }
    }
}

impl std::fmt::Display for FileId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "device {} inode {}", self.dev, self.ino)
    }
}

/// What [`resolve`] does about a missing folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Folders {
    /// Create every missing folder (readable by the owner only, for folders cosid chose itself).
    Create,
    /// Refuse a missing folder (`NotFound`): the user named the path, and a folder that is not there may be a
    /// volume not mounted yet, under which a new file would be lost when it is.
    MustExist,
}

/// Follows the symbolic links of `path` to the file they end at (which need not exist yet), makes sure of its
/// folder as `folders` says, and returns it with the folder canonical. Writing to the result writes where the
/// links point.
pub(crate) fn resolve(path: &Path, folders: Folders) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    let mut hops = 0;
    while std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
        hops += 1;
        if hops > 40 {
            return Err(io::Error::other(format!(
                "{}: more than 40 symbolic links in a row",
                path.display()
            )));
        }
        let target = std::fs::read_link(&p)?;
        // A relative target is relative to the link's folder; an absolute one replaces the whole path.
        p = p.parent().map_or(target.clone(), |dir| dir.join(&target));
    }
    let name = p.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not end in a file name", p.display()),
        )
    })?;
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match folders {
        Folders::Create => {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(dir)?;
        }
        Folders::MustExist if !dir.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "the folder {} does not exist (or is not a folder); create it first: cosid does not, so that \
                     a volume not mounted yet is never taken for an empty folder",
                    dir.display()
                ),
            ));
        }
        Folders::MustExist => {}
    }
    Ok(std::fs::canonicalize(dir)?.join(name))
}

/// Why the file at `path` (resolved, as [`resolve`] returns it) can also be reached through another path, if it
/// can: a second hard link, or the file itself being a mount point.
pub(crate) fn second_name(path: &Path, meta: &Metadata) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.nlink() > 1 {
            return Some(format!(
                "the file has {} names (hard links), and each name gets its own journal or lock",
                meta.nlink()
            ));
        }
        // A file on another device than its folder is mounted there by itself.
        let on_other_device = path
            .parent()
            .and_then(|dir| std::fs::metadata(dir).ok())
            .is_some_and(|dir| dir.dev() != meta.dev());
        if on_other_device || listed_as_mount_point(path) {
            return Some(
                "the file alone is mounted here (a bind mount of the file, not of its folder), so the same file \
                 has another path outside this mount"
                    .into(),
            );
        }
    }
    #[cfg(not(unix))]
    let _ = (path, meta);
    None
}

/// Whether the mount table lists `path` as a mount point: a bind mount from the same file system keeps the
/// device, so only the table shows it.
fn listed_as_mount_point(path: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else {
            return false;
        };
        let wanted = path.as_os_str().as_bytes();
        table
            .lines()
            .filter_map(|line| line.split(' ').nth(4))
            .any(|mount_point| unescape_mount_point(mount_point) == wanted)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        false
    }
}

/// The kernel writes space, tab, newline and backslash in a mount point as `\ooo` octal escapes.
#[cfg(any(target_os = "linux", test))]
fn unescape_mount_point(field: &str) -> Vec<u8> {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_unescaped() {
        assert_eq!(unescape_mount_point(r"/a\040b\134c"), b"/a b\\c");
        assert_eq!(unescape_mount_point(r"/plain"), b"/plain");
        assert_eq!(unescape_mount_point(r"/x\09"), b"/x\\09");
    }

    #[cfg(unix)]
    #[test]
    fn resolves_links_and_sees_second_names() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("data")).unwrap();
        std::os::unix::fs::symlink("data/state", real.join("link")).unwrap();
        // A dangling link resolves to where it points, so the first write lands there.
        assert_eq!(
            resolve(&real.join("link"), Folders::MustExist).unwrap(),
            real.join("data/state")
        );
        std::fs::write(real.join("data/state"), "x").unwrap();
        let meta = std::fs::metadata(real.join("data/state")).unwrap();
        assert_eq!(second_name(&real.join("data/state"), &meta), None);
        std::fs::hard_link(real.join("data/state"), real.join("hard")).unwrap();
        let meta = std::fs::metadata(real.join("hard")).unwrap();
        assert!(second_name(&real.join("hard"), &meta)
            .unwrap()
            .contains("2 names"));
    }
}
