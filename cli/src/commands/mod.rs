//! One module per subcommand, and what they share.

pub mod doctor;
pub mod generate;
pub mod init;
pub mod leases;
pub mod migrate;
pub mod next;
pub mod parse;
pub mod status;

use crate::failure::Failure;
use crate::settings;
use cosid::host::{ErrorCode, Holder, Settings, StoreValue};
use cosid::lease::Namespace;
use cosid::store::{LeaseStore, StoreUrl};
use cosid::{Config, Layout};
use std::future::Future;
use std::sync::Arc;

/// A text form of an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Form {
    /// Decimal: 7150089728004620289
    #[value(name = "dec", alias = "decimal")]
    Dec,
    /// yyyyMMddHHmmssSSS-slot-sequence, UTC: 20240101000000123-3-7
    Friendly,
    /// 11 base-62 digits (0-9A-Za-z): 8WlQp0kZ3Xm
    Base62,
}

impl Form {
    /// The name the command line uses.
    pub fn name(self) -> &'static str {
        match self {
            Form::Dec => "decimal",
            Form::Friendly => "friendly",
            Form::Base62 => "base62",
        }
    }
}

/// A store opened for a one-off inspection, with the small runtime its calls run on.
pub struct OpenStore {
    tokio: tokio::runtime::Runtime,
    pub store: Arc<dyn LeaseStore>,
    pub url: StoreUrl,
    /// The URL as a person should see it.
    pub shown: String,
}

impl OpenStore {
    /// Opens the configured store on a current-thread tokio runtime.
    pub fn open(config: &Config) -> Result<Self, Failure> {
        let (url, shown) = settings::store_url(config)?;
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                Failure::runtime("RUNTIME", format!("cannot start an async runtime: {e}"))
            })?;
        let store = tokio
            .block_on(cosid::store::open(&url, config.clock.clone()))
            .map_err(|e| with_store(e.into(), &shown))?;
        Ok(Self {
            tokio,
            store,
            url,
            shown,
        })
    }

    /// Runs one store call to completion; a failure names the store.
    pub fn call<T>(
        &self,
        f: impl Future<Output = Result<T, cosid::store::StoreError>>,
    ) -> Result<T, Failure> {
        self.tokio
            .block_on(f)
            .map_err(|e| with_store(e.into(), &self.shown))
    }
}

/// Starts a runtime on `settings` (the host layer's lifecycle: the same as every language's): opens the store, or
/// takes the static slot, acquires a slot and starts the keeper. Returns it with the store as a person should see
/// it.
pub fn start_runtime(settings: Settings) -> Result<(Holder, String), Failure> {
    let shown = match settings.store()? {
        Some(v) => v.shown(),
        None => StoreValue::default_store()?.shown(),
    };
    let holder = Holder::new(settings);
    match holder.runtime() {
        Ok(_) => Ok((holder, shown)),
        Err(e) => {
            let store_failure = matches!(
                e.code,
                ErrorCode::StoreUnavailable | ErrorCode::Store | ErrorCode::CorruptRecord
            );
            let failure = Failure::from(e);
            if store_failure && !failure.to_string().contains(&shown) {
                Err(failure.context(&format!("store {shown}")))
            } else {
                Err(failure)
            }
        }
    }
}

/// Prints an event that needs a person (a `STORE_UNSAFE` finding) to stderr as a warning, in the words every
/// binding logs it with.
pub fn warn(event: &cosid::Event) {
    let message = event.message();
    eprintln!(
        "warning: {}",
        message.strip_prefix("cosid: ").unwrap_or(&message)
    );
}

/// A store failure that says which store it was (the library's message names the kind, not the place).
fn with_store(e: cosid::Error, shown: &str) -> Failure {
    let failure = Failure::from(e);
    if failure.to_string().contains(shown) {
        failure
    } else {
        failure.context(&format!("store {shown}"))
    }
}

/// The configured namespace, validated.
pub fn namespace(config: &Config) -> Result<Namespace, Failure> {
    Namespace::new(config.namespace.clone()).map_err(|e| cosid::Error::from(e).into())
}

/// `41/10/12 bits (timestamp/slot/sequence), millisecond ticks from 2019-12-24T16:00:00.000Z`.
pub fn describe_layout(layout: &Layout) -> String {
    format!(
        "{}/{}/{} bits (timestamp/slot/sequence), {} ticks from {}",
        layout.timestamp_bits(),
        layout.slot_bits(),
        layout.sequence_bits(),
        layout.tick(),
        crate::show::rfc3339(layout.epoch_ms()),
    )
}
