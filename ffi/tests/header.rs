//! `include/cosid.h` is what cbindgen generates from this crate now, with version macros that match the crate.
//!
//! Regenerate it with `COSID_UPDATE_HEADER=1 cargo test -p cosid-ffi --test header`.

use std::path::PathBuf;

fn generate() -> String {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("ffi/cbindgen.toml");
    let own = config.after_includes.take().unwrap_or_default();
    config.after_includes = Some(format!(
        "\n/** The version of this header; compare with cosid_version() for the library loaded at run time. */\n\
         #define COSID_VERSION \"{}\"\n\
         #define COSID_VERSION_MAJOR {}\n\
         #define COSID_VERSION_MINOR {}\n\
         #define COSID_VERSION_PATCH {}{own}",
        env!("CARGO_PKG_VERSION"),
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_PATCH"),
    ));
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen failed to read ffi/")
        .write(&mut out);
    String::from_utf8(out).expect("cbindgen wrote UTF-8")
}

#[test]
fn committed_header_is_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../include/cosid.h");
    let fresh = generate();
    if std::env::var_os("COSID_UPDATE_HEADER").is_some() {
        std::fs::write(&path, &fresh).expect("write include/cosid.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != fresh {
        let first = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(fresh.lines().count()));
        panic!(
            "include/cosid.h is stale (first difference at line {}): regenerate it with \
             `COSID_UPDATE_HEADER=1 cargo test -p cosid-ffi --test header` and commit it",
            first + 1
        );
    }
}

#[test]
fn header_carries_the_crate_version() {
    let h = generate();
    for (name, v) in [
        ("COSID_VERSION_MAJOR", env!("CARGO_PKG_VERSION_MAJOR")),
        ("COSID_VERSION_MINOR", env!("CARGO_PKG_VERSION_MINOR")),
        ("COSID_VERSION_PATCH", env!("CARGO_PKG_VERSION_PATCH")),
    ] {
        assert!(h.contains(&format!("#define {name} {v}\n")), "{name} {v}");
    }
    assert!(h.contains(&format!(
        "#define COSID_VERSION \"{}\"",
        env!("CARGO_PKG_VERSION")
    )));
}

/// Every exported function is documented in the header.
#[test]
fn every_function_is_documented() {
    let h = generate();
    let lines: Vec<&str> = h.lines().collect();
    let mut undocumented = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(name) = line
            .split('(')
            .next()
            .and_then(|head| head.split_whitespace().last())
        {
            let name = name.trim_start_matches('*');
            let declaration = line.trim_end().ends_with(");") || line.trim_end().ends_with(',');
            let comment = line.starts_with('/') || line.starts_with(' ') || line.starts_with('*');
            if declaration && !comment && name.starts_with("cosid_") && !line.starts_with("typedef")
            {
                let before = lines[..i]
                    .iter()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .copied()
                    .unwrap_or("");
                if !before.trim_end().ends_with("*/") {
                    undocumented.push(name.to_owned());
                }
            }
        }
    }
    assert!(undocumented.is_empty(), "undocumented: {undocumented:?}");
    assert!(h.matches("cosid_result cosid_").count() >= 25, "{h}");
}
