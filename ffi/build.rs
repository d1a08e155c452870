//! Gives libcosid.so a SONAME, so that programs record the ABI version they were linked against: `libcosid.so.MAJOR`
//! from 1.0 on, `libcosid.so.0.MINOR` before (where every minor release may break the ABI). `scripts/install-c.sh`
//! installs the matching links. cargo-c sets its own SONAME (the same one), so this stays out of its way.
//!
//! Also makes the linker's `__start_`/`__stop_` symbols of linkme's sections hidden: they are synthesized with
//! protected visibility after rustc's version script (the `cosid_*` functions, `local: *`) is applied, so libcosid.so
//! exported them beside the C API, and another version script does not remove them either. `.ci/c.sh` checks that
//! only `cosid_*` is exported.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if !linux {
        return;
    }
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,start-stop-visibility=hidden");
    if std::env::var_os("CARGO_CFG_CARGO_C").is_some() {
        return;
    }
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    let minor = env!("CARGO_PKG_VERSION_MINOR");
    let soname = if major == "0" {
        format!("libcosid.so.0.{minor}")
    } else {
        format!("libcosid.so.{major}")
    };
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
}
