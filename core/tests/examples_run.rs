//! The Rust examples run, and say what they should.

#[allow(dead_code)]
#[path = "../examples/quickstart.rs"]
mod quickstart;

#[test]
fn quickstart_runs() {
    let out = quickstart::run(
        cosid::Runtime::builder()
            .store("memory:")
            .namespace("example"),
    )
    .unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    let ids: Vec<u64> = lines[..3]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{out}");
    assert!(lines[3].starts_with("lease: slot 0 fence 1"), "{out}");
    assert!(
        lines[4].starts_with("released with last timestamp Some("),
        "{out}"
    );
}
