//! napi-rs's setup, and the linker's `__start_`/`__stop_` symbols of linkme's sections made hidden: they are
//! synthesized with protected visibility after rustc's export list is applied, so the addon exported them beside
//! `napi_register_module_v1` (as `ffi/build.rs` explains for libcosid.so).

fn main() {
    napi_build::setup();
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,start-stop-visibility=hidden");
    }
}
