//! The smallest useful program: a runtime from the `COSID_*` environment (embedded SQLite by default), a few ids in
//! each text form, the lease behind them, and an ordered shutdown.
//!
//! `cargo run -p cosid --example quickstart` (try `COSID_STORE=memory:` or `COSID_LAYOUT=seconds`).

use cosid::{Builder, Error, Event};

fn main() -> Result<(), Error> {
    let out = run(Builder::from_env()?)?;
    print!("{out}");
    Ok(())
}

/// Starts a runtime from `builder`, issues ids, and returns what it would print.
pub fn run(builder: Builder) -> Result<String, Error> {
    let rt = builder
        .subscribe(|event: &Event| eprintln!("event: {event}"))
        .build()?;
    let mut out = String::new();
    for _ in 0..3 {
        let id = rt.next_id()?;
        let parts = rt.layout().decompose(id)?;
        out += &format!(
            "{id}  {}  {}  slot {} sequence {}\n",
            rt.layout().to_friendly(id)?,
            id.to_base62(),
            parts.slot,
            parts.sequence
        );
    }
    let status = rt.status();
    out += &format!(
        "lease: slot {} fence {} window ({}, {}] on the {} store\n",
        status.slot, status.fence, status.floor_ms, status.ceiling_ms, status.store
    );
    let last = rt.shutdown();
    out += &format!("released with last timestamp {last:?}\n");
    Ok(out)
}
