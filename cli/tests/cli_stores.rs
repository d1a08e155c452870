//! `cosid init`, `next` and `leases` on every network store, against the servers in `COSID_TEST_*_URL` (the
//! `.ci/services/*.sh` scripts start them). A store whose variable is unset is skipped with a printed reason.
#![cfg(feature = "stores")]

use serde_json::Value;
use std::process::Command;

fn cosid(url: &str, namespace: &str, args: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosid"));
    for (name, _) in cosid::config::ENV_VARS {
        cmd.env_remove(name);
    }
    let out = cmd
        .env("COSID_STORE", url)
        .env("COSID_NAMESPACE", namespace)
        .args(args)
        .output()
        .expect("cosid runs");
    assert!(
        out.status.success(),
        "cosid {args:?} on {url}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn check(var: &str) {
    let Some(url) = std::env::var(var).ok().filter(|u| !u.is_empty()) else {
        println!("skipped: set {var} to run cosid against that store");
        return;
    };
    let ns = format!("cli-{}", uuid_like());
    let init = cosid(&url, &ns, &["init"]);
    assert!(init.contains("schema") || init.contains("store"), "{init}");
    let ids: Vec<u64> = cosid(&url, &ns, &["next", "-n", "5"])
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 5);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let leases: Value = serde_json::from_str(&cosid(&url, &ns, &["leases", "--json"])).unwrap();
    let slots = leases["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 1, "{leases}");
    assert_eq!(slots[0]["state"], "free", "released after `next`: {leases}");
    assert_eq!(leases["record"]["bits"], 10, "{leases}");
    if let Some(password) = url
        .split_once("://")
        .and_then(|(_, r)| r.split_once('@'))
        .and_then(|(c, _)| c.split_once(':'))
        .map(|(_, p)| p)
    {
        assert!(
            !leases["store"]
                .as_str()
                .unwrap()
                .contains(&format!(":{password}@")),
            "password shown: {leases}"
        );
    }
}

fn uuid_like() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    format!("{}-{}", t.as_nanos(), std::process::id())
}

#[test]
fn redis() {
    check("COSID_TEST_REDIS_URL");
}

#[test]
fn postgres() {
    check("COSID_TEST_POSTGRES_URL");
}

#[test]
fn mysql() {
    check("COSID_TEST_MYSQL_URL");
}

#[test]
fn etcd() {
    check("COSID_TEST_ETCD_URL");
}

#[test]
fn zookeeper() {
    check("COSID_TEST_ZOOKEEPER_URL");
}

#[test]
fn mongodb() {
    check("COSID_TEST_MONGODB_URL");
}

/// `cosid status` holds a ZooKeeper lease while it prints, then releases it; a chroot keeps it apart.
#[test]
fn zookeeper_status_in_a_chroot() {
    let Some(url) = std::env::var("COSID_TEST_ZOOKEEPER_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        println!("skipped: set COSID_TEST_ZOOKEEPER_URL to run cosid against that store");
        return;
    };
    let url = format!("{}/cli-{}", url.trim_end_matches('/'), uuid_like());
    let ns = format!("cli-{}", uuid_like());
    cosid(&url, &ns, &["init"]);
    let status: Value = serde_json::from_str(&cosid(&url, &ns, &["status", "--json"])).unwrap();
    assert_eq!(status["state"], "active", "{status}");
    assert_eq!(status["slot"], 0, "{status}");
    let leases: Value = serde_json::from_str(&cosid(&url, &ns, &["leases", "--json"])).unwrap();
    assert_eq!(
        leases["slots"][0]["state"], "free",
        "released after `status`: {leases}"
    );
}
