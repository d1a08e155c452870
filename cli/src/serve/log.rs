//! The logs of `cosid serve`, through `tracing`, on stderr: a start-up line, one access-log line per request
//! (`api::front`), warnings and errors; as text or as JSON lines (`--log-format`). `COSID_SERVE_LOG=debug` (or
//! `warn`, ...) sets the level; the default is `info`.

use tracing_subscriber::fmt;

/// Installs the subscriber for `format` (`text` or `json`).
pub fn init(format: &str) {
    let level = std::env::var("COSID_SERVE_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO);
    let builder = fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_target(false);
    let _ = if format == "json" {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init()
    } else {
        builder.with_ansi(false).try_init()
    };
}
