//! `cosid generate`: the shell completions and man pages the CLI tarball ships, made from the clap definitions.

use std::process::Command;

/// Every subcommand a user sees (`generate` is hidden: it is for packagers).
const SUBCOMMANDS: [&str; 8] = [
    "next", "parse", "leases", "status", "init", "migrate", "serve", "doctor",
];

fn cosid(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cosid"))
        .args(args)
        .output()
        .expect("cosid runs");
    assert!(
        out.status.success(),
        "cosid {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn names_every_subcommand(what: &str, text: &str) {
    assert!(!text.trim().is_empty(), "{what} is empty");
    for sub in SUBCOMMANDS {
        assert!(text.contains(sub), "{what} does not name `{sub}`:\n{text}");
    }
}

#[test]
fn completions_of_every_shell_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = cosid(&["generate", "completions", shell]);
        names_every_subcommand(&format!("the {shell} completion"), &script);
        // A global flag of the settings table is completed too.
        assert!(script.contains("store"), "{shell}: no --store");
    }
}

#[test]
fn the_bash_completion_parses() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("cosid.bash");
    std::fs::write(&path, cosid(&["generate", "completions", "bash"])).expect("written");
    let Ok(out) = Command::new("bash").arg("-n").arg(&path).output() else {
        println!("skipped: no bash to check the completion with");
        return;
    };
    assert!(
        out.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_bash_completion_completes_commands_and_flags() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("cosid.bash");
    std::fs::write(&path, cosid(&["generate", "completions", "bash"])).expect("written");
    // What bash sets before calling the completion function on `cosid do<TAB>`, then on `cosid doctor --js<TAB>`.
    let script = r#"source "$1"
COMP_WORDS=(cosid do); COMP_CWORD=1; _cosid cosid do cosid; echo "${COMPREPLY[@]}"
COMP_WORDS=(cosid doctor --js); COMP_CWORD=2; _cosid cosid --js doctor; echo "${COMPREPLY[@]}""#;
    let Ok(out) = Command::new("bash")
        .args(["-c", script, "bash"])
        .arg(&path)
        .output()
    else {
        println!("skipped: no bash to run the completion in");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text,
        "doctor\n--json\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_cosid"))
        .args(["generate", "completions", "tcsh"])
        .output()
        .expect("cosid runs");
    assert_eq!(out.status.code(), Some(2));
}

/// Renders a page with groff, which must say nothing (`-ww`: every warning).
fn renders_cleanly(page: &std::path::Path) {
    let Ok(out) = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(page)
        .output()
    else {
        println!("skipped: no groff to render {}", page.display());
        return;
    };
    assert!(out.status.success(), "groff failed on {}", page.display());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "groff warns on {}",
        page.display()
    );
}

#[test]
fn the_man_page_names_every_subcommand_and_renders_without_warnings() {
    let page = cosid(&["generate", "man"]);
    assert!(
        page.starts_with(".ie") || page.contains(".TH cosid 1"),
        "{page}"
    );
    names_every_subcommand("cosid(1)", &page);
    assert!(page.contains("COSID_STORE"), "the page lists the variables");
    assert!(
        !page.contains("cosid\\-help(1)"),
        "no page is named for `help`"
    );
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("cosid.1");
    std::fs::write(&path, page).expect("written");
    renders_cleanly(&path);
}

#[test]
fn the_man_pages_of_the_subcommands_are_written_into_a_folder() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    cosid(&[
        "generate",
        "man",
        "--dir",
        dir.path().to_str().expect("UTF-8"),
    ]);
    let mut pages = vec!["cosid.1".to_owned()];
    pages.extend(SUBCOMMANDS.iter().map(|s| format!("cosid-{s}.1")));
    for page in &pages {
        let path = dir.path().join(page);
        assert!(path.exists(), "{page} missing");
        renders_cleanly(&path);
    }
    let written = std::fs::read_dir(dir.path()).expect("listed").count();
    assert_eq!(
        written,
        pages.len(),
        "one page per visible command, none for generate"
    );
}
