//! `/metrics`: counters in the Prometheus text format, kept in memory (per server process).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

/// Upper bounds of the renew latency histogram, in seconds.
const BUCKETS: [f64; 9] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5];

#[derive(Debug, Default)]
struct Counts {
    ids: BTreeMap<String, u64>,
    errors: BTreeMap<String, u64>,
    renewals: BTreeMap<String, u64>,
    regressions: u64,
    renew_buckets: [u64; BUCKETS.len()],
    renew_count: u64,
    renew_sum: f64,
}

/// The server's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    counts: Mutex<Counts>,
}

impl Metrics {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `n` ids issued in `namespace`.
    pub fn ids(&self, namespace: &str, n: u64) {
        *self.counts().ids.entry(namespace.to_owned()).or_default() += n;
    }

    /// An error answered, by its code (`LEASE_LOST`, `STORE_UNAVAILABLE`, ..., `BAD_REQUEST`).
    pub fn error(&self, code: &str) {
        *self.counts().errors.entry(code.to_owned()).or_default() += 1;
    }

    /// A renewal (through the API, or by a runtime of `/v1/ids`) and how it went (`ok` or an error code).
    pub fn renewal(&self, outcome: &str, seconds: Option<f64>) {
        let mut c = self.counts();
        *c.renewals.entry(outcome.to_owned()).or_default() += 1;
        if let Some(s) = seconds {
            for (i, b) in BUCKETS.iter().enumerate() {
                if s <= *b {
                    c.renew_buckets[i] += 1;
                }
            }
            c.renew_count += 1;
            c.renew_sum += s;
        }
    }

    /// A store regression seen by a runtime of `/v1/ids`.
    pub fn regression(&self) {
        self.counts().regressions += 1;
    }

    /// The text of `/metrics`; `held` is the slots held by the server's runtimes, by namespace.
    pub fn render(&self, held: &BTreeMap<String, u64>) -> String {
        render_grouped(&self.counts(), held)
    }
}

fn render_grouped(c: &Counts, held: &BTreeMap<String, u64>) -> String {
    let mut out = String::new();
    let head = |out: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    };
    head(
        &mut out,
        "cosid_serve_ids_issued_total",
        "counter",
        "Ids issued by GET /v1/namespaces/{ns}/ids.",
    );
    for (ns, n) in &c.ids {
        let _ = writeln!(
            out,
            "cosid_serve_ids_issued_total{{namespace=\"{}\"}} {n}",
            label(ns)
        );
    }
    head(
        &mut out,
        "cosid_serve_errors_total",
        "counter",
        "Error answers, by code.",
    );
    for (code, n) in &c.errors {
        let _ = writeln!(
            out,
            "cosid_serve_errors_total{{code=\"{}\"}} {n}",
            label(code)
        );
    }
    head(
        &mut out,
        "cosid_serve_renewals_total",
        "counter",
        "Lease renewals, by outcome.",
    );
    for (o, n) in &c.renewals {
        let _ = writeln!(
            out,
            "cosid_serve_renewals_total{{outcome=\"{}\"}} {n}",
            label(o)
        );
    }
    head(
        &mut out,
        "cosid_serve_regressions_total",
        "counter",
        "Store regressions (lost writes) seen.",
    );
    let _ = writeln!(out, "cosid_serve_regressions_total {}", c.regressions);
    head(
        &mut out,
        "cosid_serve_slots_held",
        "gauge",
        "Slots held by the server's own runtimes, by namespace.",
    );
    for (ns, n) in held {
        let _ = writeln!(
            out,
            "cosid_serve_slots_held{{namespace=\"{}\"}} {n}",
            label(ns)
        );
    }
    head(
        &mut out,
        "cosid_serve_renew_seconds",
        "histogram",
        "Time the store took to answer a renewal.",
    );
    for (i, b) in BUCKETS.iter().enumerate() {
        let _ = writeln!(
            out,
            "cosid_serve_renew_seconds_bucket{{le=\"{b}\"}} {}",
            c.renew_buckets[i]
        );
    }
    let _ = writeln!(
        out,
        "cosid_serve_renew_seconds_bucket{{le=\"+Inf\"}} {}",
        c.renew_count
    );
    let _ = writeln!(out, "cosid_serve_renew_seconds_sum {}", c.renew_sum);
    let _ = writeln!(out, "cosid_serve_renew_seconds_count {}", c.renew_count);
    out
}

/// A label value with `\`, `"` and line breaks escaped.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
