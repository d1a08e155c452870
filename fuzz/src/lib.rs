//! The bodies of cosid's fuzz targets, shared by the libFuzzer binaries (`fuzz_targets/`, run by `cargo fuzz`) and
//! the stable smoke test (`tests/smoke.rs`, which runs every body over the committed corpus and a seeded random
//! loop).
//!
//! Each body takes arbitrary bytes. Errors are the expected answer to most of them; a panic is a finding. Where an
//! input is accepted, the body also checks what the API promises of it (a canonical text form reads back to
//! itself, compose and decompose are inverse, a state file that opens writes back the same record, a record a
//! store accepts is one the protocol could have written) and panics when that does not hold.

use arbitrary::{Arbitrary, Unstructured};
use cosid::{Id, Layout, Tick};

mod records;
#[cfg(feature = "servers")]
mod servers;

pub use records::{sqlite_records, take_stats};
#[cfg(feature = "servers")]
pub use servers::{etcd_records, redis_records};

/// Without the `servers` feature the server-backed targets do nothing; their binaries need the feature anyway.
#[cfg(not(feature = "servers"))]
pub fn redis_records(_data: &[u8]) {}

/// See [`redis_records`].
#[cfg(not(feature = "servers"))]
pub fn etcd_records(_data: &[u8]) {}

/// Why a server-backed target does nothing here, if it does nothing: no `servers` feature, or its server's URL
/// variable is unset.
pub fn skip_reason(target: &str) -> Option<String> {
    let var = match target {
        "redis_records" => "COSID_TEST_REDIS_URL",
        "etcd_records" => "COSID_TEST_ETCD_URL",
        _ => return None,
    };
    if !cfg!(feature = "servers") {
        return Some("built without --features servers".into());
    }
    if std::env::var(var).map_or(true, |v| v.is_empty()) {
        return Some(format!(
            "{var} is unset (start the server with .ci/services/)"
        ));
    }
    None
}

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// Every target, by name: the binaries' names and the corpus folders' names.
pub const TARGETS: &[(&str, Target)] = &[
    ("id_text", id_text),
    ("layout", layout),
    ("namespace", namespace),
    ("config", config),
    ("state_file", state_file),
    ("sqlite_records", sqlite_records),
    ("http_wire", http_wire),
];

/// Targets that need a server (and the `servers` feature); each does nothing when its server's URL is unset.
pub const SERVER_TARGETS: &[(&str, Target)] = &[
    ("redis_records", redis_records),
    ("etcd_records", etcd_records),
];

/// The layouts whose text forms the targets exercise: the presets and custom ones with odd widths, an epoch of
/// 0 and a timestamp field that reaches past year 9999.
pub fn layouts() -> Vec<Layout> {
    let mut v = vec![Layout::millis(), Layout::seconds(), Layout::js_safe()];
    for (epoch, tick, t, s, q) in [
        (0, Tick::Millisecond, 43, 10, 10),
        (0, Tick::Second, 38, 5, 5),
        (1_700_000_000_000, Tick::Second, 1, 1, 61),
    ] {
        v.push(Layout::new(epoch, tick, t, s, q).expect("valid custom layout"));
    }
    v
}

/// Id text parsing: canonical decimal, base-62 and the friendly form of each layout. Whatever parses must be the
/// canonical form of the id it gives.
pub fn id_text(data: &[u8]) {
    let lossy;
    let s = match std::str::from_utf8(data) {
        Ok(s) => s,
        Err(_) => {
            lossy = String::from_utf8_lossy(data);
            &lossy
        }
    };
    if let Ok(id) = Id::parse_decimal(s) {
        assert_eq!(
            id.to_string(),
            s,
            "decimal {s:?} parsed but is not canonical"
        );
    }
    assert_eq!(Id::parse_decimal(s).ok(), s.parse::<Id>().ok());
    if let Ok(id) = Id::from_base62(s) {
        assert_eq!(
            id.to_base62(),
            s,
            "base-62 {s:?} parsed but is not canonical"
        );
    }
    for layout in layouts() {
        if let Ok(id) = layout.parse_friendly(s) {
            let back = layout.to_friendly(id).unwrap_or_else(|e| {
                panic!("{s:?} parsed under {layout:?} but cannot be written back: {e}")
            });
            assert_eq!(
                back, s,
                "friendly {s:?} parsed but is not canonical for {layout:?}"
            );
        }
    }
}

#[derive(Arbitrary, Debug)]
struct LayoutInput {
    epoch_ms: u64,
    second: bool,
    timestamp_bits: u8,
    slot_bits: u8,
    sequence_bits: u8,
    tick: u64,
    slot: u64,
    sequence: u64,
    raw: u64,
    unix_ms: u64,
}

/// Layouts of arbitrary widths and epochs: `Layout::new` accepts only valid ones, and on those `compose` and
/// `decompose` are inverse, the friendly form reads back, and tick arithmetic stays in range.
pub fn layout(data: &[u8]) {
    let Ok(input) = LayoutInput::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    let tick = if input.second {
        Tick::Second
    } else {
        Tick::Millisecond
    };
    // Small widths are the interesting ones; fold the byte so that most inputs build a layout.
    let width = |b: u8| if b >= 128 { b } else { b % 64 };
    let epoch = if input.epoch_ms >> 63 == 0 {
        input.epoch_ms % (Layout::MAX_UNIX_MS + 2)
    } else {
        input.epoch_ms
    };
    let Ok(l) = Layout::new(
        epoch,
        tick,
        width(input.timestamp_bits),
        width(input.slot_bits),
        width(input.sequence_bits),
    ) else {
        return;
    };
    assert!(l.total_bits() <= 63, "{l:?} is wider than 63 bits");
    assert!(
        l.tick_end_ms(l.max_tick()) <= Layout::MAX_UNIX_MS,
        "{l:?} ends past 2^53 ms"
    );
    let _ = l.cap_per_second();

    // Raw fields: accepted exactly when each is in range.
    let in_range = input.tick <= l.max_tick()
        && input.slot <= l.max_slot()
        && input.sequence <= l.max_sequence();
    let composed = l.compose(input.tick, input.slot, input.sequence);
    assert_eq!(
        composed.is_ok(),
        in_range,
        "{l:?} compose({}, {}, {})",
        input.tick,
        input.slot,
        input.sequence
    );
    // Fields folded into range: always accepted, and decompose gives them back.
    let (t, s, q) = (
        input.tick & l.max_tick(),
        input.slot & l.max_slot(),
        input.sequence & l.max_sequence(),
    );
    let id = l.compose(t, s, q).expect("fields in range");
    assert!(
        id.as_u64() >> l.total_bits() == 0,
        "{l:?} made {id:?} past its width"
    );
    let parts = l.decompose(id).expect("an id the layout made");
    assert_eq!(
        (parts.tick, parts.slot, parts.sequence),
        (t, s, q),
        "{l:?} round trip"
    );
    assert_eq!(parts.timestamp_ms, l.tick_start_ms(t));
    assert_eq!(l.tick_at(parts.timestamp_ms), Some(t));
    assert_eq!(l.tick_at(l.tick_end_ms(t)), Some(t));
    if let Ok(text) = l.to_friendly(id) {
        assert_eq!(l.parse_friendly(&text), Ok(id), "{l:?} friendly {text:?}");
    }

    // Any 64-bit value: decompose accepts exactly the values below 2^total_bits, and composes back to them.
    match l.decompose(Id::from_u64(input.raw)) {
        Ok(p) => assert_eq!(
            l.compose(p.tick, p.slot, p.sequence).map(Id::as_u64),
            Ok(input.raw)
        ),
        Err(_) => assert!(
            input.raw >> l.total_bits() != 0,
            "{l:?} refused {}",
            input.raw
        ),
    }
    if let Some(t) = l.tick_at(input.unix_ms) {
        assert!(t <= l.max_tick());
        assert!(l.tick_start_ms(t) <= input.unix_ms && input.unix_ms <= l.tick_end_ms(t));
    }
}

/// Namespace validation: what is accepted is 1 to 128 bytes of printable text, and its store encoding uses only
/// `[A-Za-z0-9_-%]` and decodes back to the name (so two names never share a key).
pub fn namespace(data: &[u8]) {
    // Two names from one input: split at the first 0xFF byte, which UTF-8 never contains.
    let (a, b) = match data.iter().position(|&x| x == 0xFF) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let names: Vec<String> = [a, b]
        .iter()
        .map(|x| String::from_utf8_lossy(x).into_owned())
        .collect();
    let mut encoded = Vec::new();
    for name in &names {
        let Ok(ns) = cosid::lease::Namespace::new(name.as_str()) else {
            continue;
        };
        assert!(!name.is_empty() && name.len() <= 128);
        assert!(
            !name.chars().any(char::is_control),
            "{name:?} has a control character"
        );
        assert_eq!(ns.as_str(), name);
        let enc = ns.encoded();
        assert!(
            enc.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'%'),
            "{name:?} encodes to {enc:?}"
        );
        assert_eq!(
            decode_percent(enc).as_deref(),
            Some(name.as_bytes()),
            "{name:?} encodes to {enc:?}"
        );
        assert_eq!(name.parse::<cosid::lease::Namespace>().as_ref(), Ok(&ns));
        encoded.push((name.clone(), enc.to_owned()));
    }
    if let [(n1, e1), (n2, e2)] = &encoded[..] {
        assert_eq!(
            n1 == n2,
            e1 == e2,
            "{n1:?} and {n2:?} encode to {e1:?} and {e2:?}"
        );
    }
}

fn decode_percent(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

/// The names `Config::with_vars` reads, and `HOSTNAME` (for `ordinal`).
const VARS: &[&str] = &[
    "COSID_STORE",
    "COSID_NAMESPACE",
    "COSID_LAYOUT",
    "COSID_TTL",
    "COSID_TOLERANCE",
    "COSID_BITS",
    "COSID_OWNER_KEY",
    "COSID_PREFERRED_SLOT",
    "COSID_ACQUIRE_TIMEOUT",
    "COSID_MAX_WAIT",
    "COSID_BACKWARDS_WAIT",
    "HOSTNAME",
];

/// Configuration and URL parsing: `Config::with_vars` with arbitrary values, `StaticSpec::parse`,
/// `StoreUrl::parse` (whose display form must parse back to the same store), `parse_duration`, `parse_layout`,
/// `ordinal_of`.
///
/// Input: lines of `NAME=VALUE` (an unknown NAME picks a variable by its bytes); every value and the whole input
/// are also tried as a URL, a duration, a layout name and a host name.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut vars: Vec<(&str, String)> = Vec::new();
    for line in text.split('\n') {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let var = VARS
            .iter()
            .find(|&&name| name == k)
            .copied()
            .unwrap_or_else(|| {
                VARS[k
                    .bytes()
                    .fold(0usize, |a, b| a.wrapping_add(usize::from(b)))
                    % VARS.len()]
            });
        vars.push((var, v.to_owned()));
    }
    let lookup = |name: &str| {
        vars.iter()
            .rev()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    };
    if let Ok(config) = cosid::Config::default().with_vars(lookup) {
        if config.validate().is_ok() {
            assert!(config.bits >= 1 && config.bits <= config.layout.slot_bits());
            let _ = config.owner_key();
            let _ = config.acquire_timeout();
        }
    }
    let host = lookup("HOSTNAME").unwrap_or_default();
    let mut candidates: Vec<&str> = vars.iter().map(|(_, v)| v.as_str()).collect();
    candidates.push(&text);
    for s in candidates {
        if let Some(Ok(spec)) = cosid::static_slot::StaticSpec::parse(s, &host) {
            assert!(spec.manual == s.starts_with("manual:"));
            assert!(spec.manual || spec.ahead >= std::time::Duration::from_millis(100));
        }
        if let Ok(url) = cosid::store::StoreUrl::parse(s) {
            let shown = url.to_string();
            // The display form hides passwords; without one it names the same store.
            if !shown.contains("***") {
                assert_eq!(
                    cosid::store::StoreUrl::parse(&shown).as_ref().ok(),
                    Some(&url),
                    "{s:?} parsed as {url:?}, shown as {shown:?}"
                );
            }
        }
        let _ = cosid::config::parse_duration("fuzz", s);
        let _ = cosid::config::parse_layout("fuzz", s);
        if let Ok(n) = cosid::static_slot::ordinal_of(s) {
            assert!(s.ends_with(&format!("-{n}")), "{s:?} gave ordinal {n}");
        }
    }
}

thread_local! {
    static STATE_DIR: tempfile::TempDir = tempfile::tempdir().expect("temporary folder");
}

/// State file decoding: `StateFile::open` on arbitrary file content refuses what is not a record it wrote (an empty
/// file is a new one, with no record); a record it reads writes back to the same record.
pub fn state_file(data: &[u8]) {
    STATE_DIR.with(|dir| {
        let path = dir.path().join("state");
        std::fs::write(&path, data).expect("write the state file");
        let opened = cosid::static_slot::StateFile::open(&path);
        let Ok((file, record)) = opened else {
            return;
        };
        // An empty file is a new one, with no record yet (as a missing one); any other content is a record.
        let Some(record) = record else {
            assert!(
                data.is_empty(),
                "{:?} read as no record",
                String::from_utf8_lossy(data)
            );
            return;
        };
        file.write(record).expect("write the state file back");
        drop(file);
        let (_, again) = cosid::static_slot::StateFile::open(&path).expect("reopen what it wrote");
        assert_eq!(
            again,
            Some(record),
            "state file {:?} did not read back",
            String::from_utf8_lossy(data)
        );
    });
}

/// The lease API's request and error bodies (`cosid serve`, the `http://` store), as a server or client reads them
/// off the wire: never a panic; a body that parses and decodes comes back the same through its wire form; an error
/// body becomes a store error whose wire form reads back as the same error.
///
/// Input: the first byte picks the body type, the rest is the JSON text.
pub fn http_wire(data: &[u8]) {
    use cosid::store::http::wire;
    let Some((&kind, text)) = data.split_first() else {
        return;
    };
    fn again<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> T {
        let text = serde_json::to_vec(value).expect("a wire value serializes");
        serde_json::from_slice(&text).expect("a serialized wire value parses")
    }
    match kind % 6 {
        0 => {
            if let Ok(b) = serde_json::from_slice::<wire::AcquireBody>(text) {
                if let Ok((config, request)) = b.decode() {
                    let back = again(&wire::AcquireBody::of(&config, &request))
                        .decode()
                        .unwrap();
                    assert_eq!(back.0, config);
                    assert_eq!(
                        (back.1.owner, back.1.ttl_ms, back.1.preferred_slot),
                        (request.owner, request.ttl_ms, request.preferred_slot)
                    );
                }
            }
        }
        1 => {
            if let Ok(b) = serde_json::from_slice::<wire::RenewBody>(text) {
                if let Ok(lease) = b.lease.decode() {
                    assert_eq!(again(&wire::Lease::of(&lease)).decode().unwrap(), lease);
                }
            }
        }
        2 => {
            if let Ok(b) = serde_json::from_slice::<wire::ReleaseBody>(text) {
                let _ = b.lease.decode();
            }
        }
        3 => {
            if let Ok(b) = serde_json::from_slice::<wire::InspectionBody>(text) {
                if let Ok(i) = b.decode() {
                    assert_eq!(again(&wire::InspectionBody::of(&i)).decode().unwrap(), i);
                }
            }
        }
        4 => {
            if let Ok(b) = serde_json::from_slice::<wire::NotBeforeBody>(text) {
                if let Ok(c) = b.config.decode() {
                    assert_eq!(again(&wire::Config::of(&c)).decode().unwrap(), c);
                }
            }
        }
        _ => {
            if let Ok(b) = serde_json::from_slice::<wire::ErrorBody>(text) {
                for status in [400, 429, 500, 503] {
                    let e = b.error.clone().into_store_error(status);
                    let sent = again(&wire::ErrorBody::of(&e));
                    let back = sent.error.into_store_error(wire::status(&e));
                    assert_eq!(format!("{e:?}"), format!("{back:?}"));
                    assert_eq!(e.is_retryable(), back.is_retryable());
                }
            }
        }
    }
}
