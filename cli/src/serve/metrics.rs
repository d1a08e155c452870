//! `/metrics`: counters, gauges and histograms in the Prometheus text format, kept in memory (per server process).
//!
//! Every label set is bounded: routes are the API's path templates, codes are HTTP statuses or cosid's error
//! codes, and namespaces past the first [`NAMESPACE_LABELS`] seen fold into `other`.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write;
use std::sync::Mutex;

/// Upper bounds of the latency histograms, in seconds.
const BUCKETS: [f64; 11] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5, 10.0,
];

/// How many namespaces get a label of their own; the others are counted under `other`.
pub const NAMESPACE_LABELS: usize = 64;

/// The dashboard's chart: acquisitions and refusals per [`HISTORY_STEP_S`] seconds, for [`HISTORY_STEPS`] steps.
pub const HISTORY_STEP_S: u64 = 10;
pub const HISTORY_STEPS: usize = 60;

#[derive(Debug, Default, Clone)]
struct Histogram {
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, s: f64) {
        for (i, b) in BUCKETS.iter().enumerate() {
            if s <= *b {
                self.buckets[i] += 1;
            }
        }
        self.count += 1;
        self.sum += s;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, b) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {}",
                self.buckets[i]
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let braces = |s: &str| {
            if s.is_empty() {
                String::new()
            } else {
                format!("{{{s}}}")
            }
        };
        let _ = writeln!(out, "{name}_sum{} {}", braces(labels), self.sum);
        let _ = writeln!(out, "{name}_count{} {}", braces(labels), self.count);
    }
}

/// One step of the dashboard's chart.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct Step {
    /// Start of the step (Unix seconds).
    pub at: u64,
    pub acquired: u64,
    pub refused: u64,
    pub renewed: u64,
    pub lost: u64,
}

/// A namespace's slots as the store last showed them.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Occupancy {
    /// `2^bits`; 0 while the namespace has no record.
    pub capacity: u64,
    /// Slots held by a live lease (any client's).
    pub held: u64,
}

#[derive(Debug, Default)]
struct Counts {
    ids: BTreeMap<String, u64>,
    errors: BTreeMap<String, u64>,
    renewals: BTreeMap<String, u64>,
    acquisitions: BTreeMap<String, u64>,
    limited: BTreeMap<&'static str, u64>,
    connections_refused: BTreeMap<&'static str, u64>,
    requests: BTreeMap<(&'static str, u16), u64>,
    latency: BTreeMap<&'static str, Histogram>,
    regressions: u64,
    renew: Histogram,
    namespaces: BTreeMap<String, Occupancy>,
    history: VecDeque<Step>,
}

/// The server's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    counts: Mutex<Counts>,
}

/// `namespace`, or `other` once [`NAMESPACE_LABELS`] others have a label.
fn bounded(map: &BTreeMap<String, u64>, namespace: &str) -> String {
    if map.contains_key(namespace) || map.len() < NAMESPACE_LABELS {
        namespace.to_owned()
    } else {
        "other".to_owned()
    }
}

impl Metrics {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `n` ids issued in `namespace`.
    pub fn ids(&self, namespace: &str, n: u64) {
        let mut c = self.counts();
        let key = bounded(&c.ids, namespace);
        *c.ids.entry(key).or_default() += n;
    }

    /// An error answered, by its code (`LEASE_LOST`, `STORE_UNAVAILABLE`, ..., `BAD_REQUEST`).
    pub fn error(&self, code: &str) {
        *self.counts().errors.entry(code.to_owned()).or_default() += 1;
    }

    fn step(c: &mut Counts, now_s: u64) -> &mut Step {
        let at = now_s - now_s % HISTORY_STEP_S;
        if c.history.back().is_none_or(|s| s.at != at) {
            c.history.push_back(Step {
                at,
                ..Step::default()
            });
            while c.history.len() > HISTORY_STEPS {
                c.history.pop_front();
            }
        }
        c.history.back_mut().expect("just pushed")
    }

    /// A renewal (through the API, or by a runtime of `/v1/ids`) and how it went (`ok` or an error code).
    pub fn renewal(&self, outcome: &str, seconds: Option<f64>) {
        let mut c = self.counts();
        *c.renewals.entry(outcome.to_owned()).or_default() += 1;
        if let Some(s) = seconds {
            c.renew.observe(s);
        }
        let step = Self::step(&mut c, now_s());
        match outcome {
            "ok" => step.renewed += 1,
            "LEASE_LOST" | "lost" => step.lost += 1,
            _ => {}
        }
    }

    /// An acquisition through the API and how it went (`ok` or an error code: `EXHAUSTED`, ...).
    pub fn acquisition(&self, outcome: &str) {
        let mut c = self.counts();
        *c.acquisitions.entry(outcome.to_owned()).or_default() += 1;
        let step = Self::step(&mut c, now_s());
        if outcome == "ok" {
            step.acquired += 1;
        } else {
            step.refused += 1;
        }
    }

    /// A request refused by a rate limit.
    pub fn limited(&self, reason: &'static str) {
        *self.counts().limited.entry(reason).or_default() += 1;
    }

    /// A connection closed at once by a connection cap.
    pub fn connection_refused(&self, reason: &'static str) {
        *self.counts().connections_refused.entry(reason).or_default() += 1;
    }

    /// A request answered: its route template, status and time.
    pub fn request(&self, route: &'static str, status: u16, seconds: f64) {
        let mut c = self.counts();
        *c.requests.entry((route, status)).or_default() += 1;
        c.latency.entry(route).or_default().observe(seconds);
    }

    /// A store regression seen by a runtime of `/v1/ids`.
    pub fn regression(&self) {
        self.counts().regressions += 1;
    }

    /// Whether `namespace` has (or may get) a label of its own among the watched namespaces.
    pub fn watch(&self, namespace: &str) -> bool {
        let mut c = self.counts();
        if c.namespaces.contains_key(namespace) {
            return true;
        }
        if c.namespaces.len() >= NAMESPACE_LABELS {
            return false;
        }
        c.namespaces
            .insert(namespace.to_owned(), Occupancy::default());
        true
    }

    /// The namespaces watched.
    pub fn watched(&self) -> Vec<String> {
        self.counts().namespaces.keys().cloned().collect()
    }

    /// What the store showed of `namespace`.
    pub fn occupancy(&self, namespace: &str, o: Occupancy) {
        if let Some(slot) = self.counts().namespaces.get_mut(namespace) {
            *slot = o;
        }
    }

    /// Every watched namespace's occupancy.
    pub fn occupancies(&self) -> BTreeMap<String, Occupancy> {
        self.counts().namespaces.clone()
    }

    /// The chart's steps, oldest first.
    pub fn history(&self) -> Vec<Step> {
        self.counts().history.iter().copied().collect()
    }

    /// The text of `/metrics`; `held` is the slots held by the server's runtimes, by namespace.
    pub fn render(&self, held: &BTreeMap<String, u64>) -> String {
        render_grouped(&self.counts(), held)
    }
}

fn now_s() -> u64 {
    cosid::clock::Clock::now_ms(&cosid::clock::SystemClock) / 1000
}

fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn counter_by<K: std::fmt::Display>(
    out: &mut String,
    name: &str,
    help: &str,
    label_name: &str,
    map: &BTreeMap<K, u64>,
) {
    head(out, name, "counter", help);
    for (k, n) in map {
        let _ = writeln!(
            out,
            "{name}{{{label_name}=\"{}\"}} {n}",
            label(&k.to_string())
        );
    }
}

fn render_grouped(c: &Counts, held: &BTreeMap<String, u64>) -> String {
    let mut out = String::new();
    head(
        &mut out,
        "cosid_serve_build_info",
        "gauge",
        "The server's version; always 1.",
    );
    let _ = writeln!(
        out,
        "cosid_serve_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
    head(
        &mut out,
        "cosid_serve_requests_total",
        "counter",
        "Requests answered, by route template and HTTP status.",
    );
    for ((route, code), n) in &c.requests {
        let _ = writeln!(
            out,
            "cosid_serve_requests_total{{route=\"{}\",code=\"{code}\"}} {n}",
            label(route)
        );
    }
    head(
        &mut out,
        "cosid_serve_request_duration_seconds",
        "histogram",
        "Time to answer a request, by route template.",
    );
    for (route, h) in &c.latency {
        h.render(
            &mut out,
            "cosid_serve_request_duration_seconds",
            &format!("route=\"{}\"", label(route)),
        );
    }
    counter_by(
        &mut out,
        "cosid_serve_ids_issued_total",
        "Ids issued by GET /v1/namespaces/{ns}/ids.",
        "namespace",
        &c.ids,
    );
    counter_by(
        &mut out,
        "cosid_serve_errors_total",
        "Error answers, by code.",
        "code",
        &c.errors,
    );
    counter_by(
        &mut out,
        "cosid_serve_acquisitions_total",
        "Acquisitions through the API, by outcome (ok, or the error code of a refusal).",
        "outcome",
        &c.acquisitions,
    );
    counter_by(
        &mut out,
        "cosid_serve_renewals_total",
        "Lease renewals, by outcome.",
        "outcome",
        &c.renewals,
    );
    counter_by(
        &mut out,
        "cosid_serve_limited_total",
        "Requests refused by a rate limit, by limit.",
        "reason",
        &c.limited,
    );
    counter_by(
        &mut out,
        "cosid_serve_connections_refused_total",
        "Connections closed at once by a connection cap, by cap.",
        "reason",
        &c.connections_refused,
    );
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
        "Slots held by the server's own runtimes (GET .../ids), by namespace.",
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
        "cosid_serve_namespace_slots",
        "gauge",
        "Slots of the namespaces this server has served, as the store showed them (refreshed every few seconds): held by any client, or used before and free now.",
    );
    for (ns, o) in &c.namespaces {
        let ns = label(ns);
        let _ = writeln!(
            out,
            "cosid_serve_namespace_slots{{namespace=\"{ns}\",state=\"held\"}} {}",
            o.held
        );
        let _ = writeln!(
            out,
            "cosid_serve_namespace_slots{{namespace=\"{ns}\",state=\"free\"}} {}",
            o.capacity.saturating_sub(o.held)
        );
    }
    head(
        &mut out,
        "cosid_serve_namespace_capacity",
        "gauge",
        "Slots of each namespace (2^bits; 0 before it has a record).",
    );
    for (ns, o) in &c.namespaces {
        let _ = writeln!(
            out,
            "cosid_serve_namespace_capacity{{namespace=\"{}\"}} {}",
            label(ns),
            o.capacity
        );
    }
    head(
        &mut out,
        "cosid_serve_renew_seconds",
        "histogram",
        "Time the store took to answer a renewal.",
    );
    c.renew.render(&mut out, "cosid_serve_renew_seconds", "");
    out
}

/// A label value with `\`, `"` and line breaks escaped.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_labels_are_bounded() {
        let m = Metrics::default();
        for i in 0..NAMESPACE_LABELS + 10 {
            m.ids(&format!("ns{i}"), 1);
            m.watch(&format!("ns{i}"));
        }
        let text = m.render(&BTreeMap::new());
        assert!(
            text.contains("cosid_serve_ids_issued_total{namespace=\"other\"} 10"),
            "{text}"
        );
        assert_eq!(m.watched().len(), NAMESPACE_LABELS);
        assert!(text.contains("cosid_serve_build_info{version="));
    }
}
