//! The SQLite store's folder rule: the default file's folders are created (owner only); a path the user named must
//! have its folder, which is never created (a volume not mounted yet must not be taken for an empty folder).
#![cfg(feature = "sqlite")]

use cosid::clock::SystemClock;
use cosid::store::{SqliteStore, StoreError};
use std::sync::Arc;

#[test]
fn a_named_path_whose_folder_is_missing_is_refused_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    for missing in ["volume/leases.db", "volume/cosid/leases.db"] {
        let path = dir.path().join(missing);
        let err = SqliteStore::open(&path, Arc::new(SystemClock)).unwrap_err();
        assert!(matches!(err, StoreError::Unavailable { .. }), "{err}");
        assert_eq!(
            cosid::host::ErrorCode::of_store(&err).name(),
            "STORE_UNAVAILABLE"
        );
        assert!(err.to_string().contains("does not exist"), "{err}");
        assert!(
            !dir.path().join("volume").exists(),
            "a folder was created for {missing}"
        );
    }
    // Its folder there, the file is created.
    std::fs::create_dir(dir.path().join("volume")).unwrap();
    SqliteStore::open(&dir.path().join("volume/leases.db"), Arc::new(SystemClock)).unwrap();
    assert!(dir.path().join("volume/leases.db").exists());
}

/// Child role: opens the default store (`XDG_STATE_HOME` set by the parent).
#[test]
fn default_store_child() {
    if std::env::var_os("COSID_FOLDERS_CHILD").is_none() {
        return;
    }
    let cosid::store::StoreUrl::Sqlite(path) = cosid::store::StoreUrl::default_sqlite().unwrap()
    else {
        panic!("the default store is not SQLite");
    };
    SqliteStore::open(&path, Arc::new(SystemClock)).unwrap();
}

#[cfg(unix)]
#[test]
fn the_default_file_gets_its_folders_readable_by_the_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("home/.local/state");
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "default_store_child", "--test-threads=1"])
        .env("COSID_FOLDERS_CHILD", "1")
        .env("XDG_STATE_HOME", &state)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(state.join("cosid/leases.db").exists());
    for folder in [state.join("cosid"), state.clone()] {
        let mode = std::fs::metadata(&folder).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", folder.display());
    }
}
