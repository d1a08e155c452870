//! The fuzz targets on stable Rust, without libFuzzer: every target's body over its committed corpus, then over
//! seeded random inputs (fresh bytes, and corpus entries with bytes flipped, inserted and cut).
//!
//! `cargo test --manifest-path fuzz/Cargo.toml` runs it. It prints its seed; `COSID_FUZZ_SEED=<n>` replays one,
//! and `COSID_FUZZ_ITERATIONS=<n>` sets how many random inputs each target gets (default 2000). A panic names
//! the target and the input (hex), which can be saved as a file and replayed with `cargo fuzz run <target> FILE`.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?}: expected a whole number")),
    )
}

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus folder {}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read a corpus file");
            (p, bytes)
        })
        .collect()
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs one input, naming it if the target panics.
fn run(target: &str, f: cosid_fuzz::Target, data: &[u8], origin: &str) {
    if let Err(panic) = std::panic::catch_unwind(|| f(data)) {
        eprintln!(
            "fuzz target {target} failed on {origin}; input ({} bytes, hex): {}",
            data.len(),
            hex(data)
        );
        std::panic::resume_unwind(panic);
    }
}

fn mutate(rng: &mut ChaCha8Rng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        match rng.random_range(0..4) {
            0 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] = rng.random();
            }
            2 => {
                let i = rng.random_range(0..=v.len());
                v.insert(i, rng.random());
            }
            _ if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v.truncate(i);
            }
            _ => v.push(rng.random()),
        }
    }
    v
}

fn smoke(targets: &[(&str, cosid_fuzz::Target)], seed: u64, iterations: u64) {
    for &(name, f) in targets {
        if let Some(reason) = cosid_fuzz::skip_reason(name) {
            println!("{name}: skipped: {reason}");
            continue;
        }
        let seeds = corpus(name);
        assert!(!seeds.is_empty(), "target {name} has no committed corpus");
        for (path, data) in &seeds {
            run(name, f, data, &path.display().to_string());
        }
        let mut rng = ChaCha8Rng::seed_from_u64(
            seed ^ name
                .bytes()
                .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))),
        );
        for i in 0..iterations {
            let data = if i % 2 == 0 {
                let (_, s) = &seeds[rng.random_range(0..seeds.len())];
                mutate(&mut rng, s)
            } else {
                let mut v = vec![0u8; rng.random_range(0..256)];
                rng.fill_bytes(&mut v);
                v
            };
            run(name, f, &data, &format!("random input {i} of seed {seed}"));
        }
        let stats = cosid_fuzz::take_stats();
        let calls = if stats.split(", ").all(|kind| kind.ends_with(" 0/0")) {
            String::new() // this target makes no store calls
        } else {
            format!(" (store calls accepted: {stats})")
        };
        println!(
            "{name}: {} corpus files and {iterations} random inputs passed{calls}",
            seeds.len()
        );
    }
}

fn seed() -> u64 {
    let seed = env_u64("COSID_FUZZ_SEED").unwrap_or_else(rand::random);
    println!("seed {seed} (replay with COSID_FUZZ_SEED={seed})");
    seed
}

#[test]
fn every_target_survives_its_corpus_and_random_inputs() {
    let iterations = env_u64("COSID_FUZZ_ITERATIONS").unwrap_or(2000);
    smoke(cosid_fuzz::TARGETS, seed(), iterations);
}

/// The server-backed targets: they do nothing unless built with `--features servers` and pointed at a server
/// (`COSID_TEST_REDIS_URL`, `COSID_TEST_ETCD_URL`); each says so when skipped.
#[test]
fn the_server_targets_survive_their_corpus_and_random_inputs() {
    let iterations = env_u64("COSID_FUZZ_ITERATIONS").unwrap_or(2000) / 4;
    smoke(cosid_fuzz::SERVER_TARGETS, seed(), iterations);
}
