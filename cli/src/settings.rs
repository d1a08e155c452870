//! The global flags, each also read from its `COSID_*` variable, turned into a [`cosid::Config`] by the library's
//! own parser, and the store they name.

use crate::failure::Failure;
use clap::parser::ValueSource;
use clap::ArgMatches;
use cosid::store::StoreUrl;
use cosid::{Config, ConfigError};

/// Settings shared by every command. A flag wins over its variable; a variable wins over the default.
#[derive(Debug, Clone, clap::Args)]
pub struct Global {
    /// Store URL: sqlite:///path, memory:, redis://, postgres://, mysql:// or etcd://
    ///
    /// Default: the SQLite file $XDG_STATE_HOME/cosid/leases.db, else ~/.local/state/cosid/leases.db.
    // Never print the value: a store URL may carry a password (`--help` shows `[env: COSID_STORE=...]`).
    #[arg(
        long,
        global = true,
        env = "COSID_STORE",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub store: Option<String>,

    /// Namespace name [default: default]
    #[arg(long, global = true, env = "COSID_NAMESPACE", value_name = "NAME")]
    pub namespace: Option<String>,

    /// Id layout: millis, seconds or js-safe [default: millis]
    #[arg(long, global = true, env = "COSID_LAYOUT", value_name = "LAYOUT")]
    pub layout: Option<String>,

    /// Lease length, e.g. 30s [default: 30s]
    #[arg(long, global = true, env = "COSID_TTL", value_name = "DURATION")]
    pub ttl: Option<String>,

    /// How far past expiry a holder may issue, e.g. 1s [default: 1s]
    #[arg(long, global = true, env = "COSID_TOLERANCE", value_name = "DURATION")]
    pub tolerance: Option<String>,

    /// Slot bits of the namespace [default: 10]
    #[arg(long, global = true, env = "COSID_BITS", value_name = "N")]
    pub bits: Option<String>,

    /// Owner key of this process's lease [default: host:pid]
    #[arg(long, global = true, env = "COSID_OWNER_KEY", value_name = "KEY")]
    pub owner_key: Option<String>,

    /// A slot to take if it is free
    #[arg(long, global = true, env = "COSID_PREFERRED_SLOT", value_name = "SLOT")]
    pub preferred_slot: Option<String>,

    /// How long start-up retries an exhausted or unreachable store [default: the ttl]
    #[arg(
        long,
        global = true,
        env = "COSID_ACQUIRE_TIMEOUT",
        value_name = "DURATION"
    )]
    pub acquire_timeout: Option<String>,
}

/// Each flag: its clap id, its variable, its spelling on the command line.
const FLAGS: &[(&str, &str, &str)] = &[
    ("store", "COSID_STORE", "--store"),
    ("namespace", "COSID_NAMESPACE", "--namespace"),
    ("layout", "COSID_LAYOUT", "--layout"),
    ("ttl", "COSID_TTL", "--ttl"),
    ("tolerance", "COSID_TOLERANCE", "--tolerance"),
    ("bits", "COSID_BITS", "--bits"),
    ("owner_key", "COSID_OWNER_KEY", "--owner-key"),
    ("preferred_slot", "COSID_PREFERRED_SLOT", "--preferred-slot"),
    (
        "acquire_timeout",
        "COSID_ACQUIRE_TIMEOUT",
        "--acquire-timeout",
    ),
];

impl Global {
    fn value(&self, id: &str) -> Option<&String> {
        match id {
            "store" => self.store.as_ref(),
            "namespace" => self.namespace.as_ref(),
            "layout" => self.layout.as_ref(),
            "ttl" => self.ttl.as_ref(),
            "tolerance" => self.tolerance.as_ref(),
            "bits" => self.bits.as_ref(),
            "owner_key" => self.owner_key.as_ref(),
            "preferred_slot" => self.preferred_slot.as_ref(),
            "acquire_timeout" => self.acquire_timeout.as_ref(),
            _ => None,
        }
    }

    /// The configuration: the library's defaults and parser, fed with these flags (clap has already fallen back
    /// to their variables) and with the process environment for the variables that have no flag.
    ///
    /// An error names the flag when the bad value came from the command line, and the variable otherwise.
    pub fn config(&self, matches: &ArgMatches) -> Result<Config, Failure> {
        // The library reads an empty variable as unset; an empty flag, though, is a mistake worth saying.
        for (id, _, flag) in FLAGS {
            if self.value(id).is_some_and(String::is_empty) && from_command_line(matches, id) {
                let e = ConfigError::new(*flag, "", "a value (leave the flag out for the default)");
                return Err(cosid::Error::from(e).into());
            }
        }
        let lookup = |var: &str| match FLAGS.iter().find(|(_, v, _)| *v == var) {
            Some((id, _, _)) => self.value(id).cloned(),
            None => std::env::var(var).ok(),
        };
        Config::default()
            .with_vars(lookup)
            .map_err(|mut e: ConfigError| {
                if let Some((id, _, flag)) = FLAGS.iter().find(|(_, v, _)| *v == e.setting) {
                    if from_command_line(matches, id) {
                        e.setting = (*flag).to_owned();
                    }
                }
                cosid::Error::from(e).into()
            })
    }
}

/// Whether the argument `id` was given on the command line (of `cosid` or of its subcommand).
fn from_command_line(matches: &ArgMatches, id: &str) -> bool {
    let here = matches!(matches.value_source(id), Some(ValueSource::CommandLine));
    let below = matches
        .subcommand()
        .is_some_and(|(_, sub)| matches!(sub.value_source(id), Some(ValueSource::CommandLine)));
    here || below
}

/// The store a configuration names, and how to show it to a person.
pub fn store_url(config: &Config) -> Result<(StoreUrl, String), Failure> {
    match &config.store {
        Some(text) => {
            let url = StoreUrl::parse(text).map_err(cosid::Error::from)?;
            let shown = describe(&url);
            Ok((url, shown))
        }
        None => {
            let url = StoreUrl::default_sqlite().map_err(cosid::Error::from)?;
            let shown = describe(&url);
            Ok((url, shown))
        }
    }
}

fn describe(url: &StoreUrl) -> String {
    match url {
        StoreUrl::Sqlite(path) if path.is_absolute() => format!("sqlite://{}", path.display()),
        StoreUrl::Sqlite(path) => format!("sqlite:{}", path.display()),
        // Passwords are shown as `***`.
        other => other.to_string(),
    }
}

/// The help text that lists every variable the command reads.
pub fn env_help() -> String {
    let mut out = String::from("Environment variables (a flag overrides its variable):\n");
    let width = cosid::config::ENV_VARS
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);
    for (name, what) in cosid::config::ENV_VARS {
        out.push_str(&format!("  {name:<width$}  {what}\n"));
    }
    out.push_str("\nExit status: 0 on success, 1 when the store or the runtime fails, 2 for bad usage, settings or input.");
    out
}
