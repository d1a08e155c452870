//! The global flags: one per row of the host layer's settings table (`cosid::host::SETTINGS`), each also read
//! from its `COSID_*` variable, parsed by the host layer like every other language's settings.

use crate::failure::Failure;
use clap::parser::ValueSource;
use clap::{Arg, ArgMatches};
use cosid::host::{Kind, Setting, Settings, StoreValue, Value, SETTINGS};
use cosid::store::StoreUrl;
use cosid::{Config, ConfigError};

/// The settings that are flags: all but the fork policy (a `cosid` command never forks).
fn flags() -> impl Iterator<Item = &'static Setting> {
    SETTINGS.iter().filter(|s| s.kind != Kind::OnFork)
}

/// One global flag per setting. Values from the environment are never shown in `--help`: a store URL may hold a
/// password.
pub fn args() -> Vec<Arg> {
    flags()
        .map(|s| {
            Arg::new(s.key)
                // Made once per run: clap keeps `&'static str` names.
                .long(&*Box::leak(s.key.replace('_', "-").into_boxed_str()))
                .env(s.env)
                .hide_env_values(true)
                .global(true)
                .value_name(value_name(s.kind))
                .help(format!("{} [default: {}]", capitalized(s.doc), s.default))
        })
        .collect()
}

fn value_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Store => "URL",
        Kind::Text => "TEXT",
        Kind::Layout => "LAYOUT",
        Kind::Duration => "DURATION",
        Kind::Number => "N",
        Kind::Slot => "SLOT",
        Kind::OnFork => "POLICY",
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The settings: the host layer's defaults and parser, fed with the flags (clap has already fallen back to their
/// variables) and the process environment for the variables that have no flag. A flag wins over its variable; a
/// variable wins over the default. An error names the flag when the bad value came from the command line, and the
/// variable otherwise.
pub fn settings(matches: &ArgMatches) -> Result<Settings, Failure> {
    let given = |key: &str| given(matches, key);
    // Variables first (those of flags given on the command line are overridden next).
    let mut settings = Settings::with_vars(|var| match SETTINGS.iter().find(|s| s.env == var) {
        // No flag (a command never forks), but the variable is still checked like every language checks it.
        Some(s) if s.kind == Kind::OnFork => std::env::var(var).ok(),
        Some(s) if from_command_line(matches, s.key) => None,
        Some(s) => given(s.key),
        None => std::env::var(var).ok(),
    })?;
    for s in flags().filter(|s| from_command_line(matches, s.key)) {
        let value = given(s.key).unwrap_or_default();
        let flag = s.flag();
        if value.is_empty() {
            // The library reads an empty variable as unset; an empty flag, though, is a mistake worth saying.
            let e = ConfigError::new(flag, "", "a value (leave the flag out for the default)");
            return Err(cosid::Error::from(e).into());
        }
        settings.set_value_as(s.key, Value::Text(&value), Some(&flag))?;
    }
    Ok(settings)
}

/// The value of the flag `key` (from the command line, else its variable), if any.
pub fn given(matches: &ArgMatches, key: &str) -> Option<String> {
    // The subcommand's matches first: a global flag given after the subcommand lands there.
    let sub = matches
        .subcommand()
        .and_then(|(_, sub)| sub.try_get_one::<String>(key).ok().flatten().cloned());
    sub.or_else(|| matches.try_get_one::<String>(key).ok().flatten().cloned())
}

/// Whether the argument `id` was given on the command line (of `cosid` or of its subcommand).
fn from_command_line(matches: &ArgMatches, id: &str) -> bool {
    let here = matches!(matches.value_source(id), Some(ValueSource::CommandLine));
    let below = matches
        .subcommand()
        .is_some_and(|(_, sub)| matches!(sub.value_source(id), Some(ValueSource::CommandLine)));
    here || below
}

/// The lease store a configuration names, and how to show it to a person (passwords as `***`). A static or
/// manual slot has no store to open: commands that read or write a store refuse it.
pub fn store_url(config: &Config) -> Result<(StoreUrl, String), Failure> {
    let value = match &config.store {
        Some(text) => StoreValue::parse(text)?,
        None => StoreValue::default_store()?,
    };
    let shown = value.shown();
    match value {
        StoreValue::Lease(url) => Ok((url, shown)),
        StoreValue::Static(_) => Err(Failure::usage(
            "CONFIG",
            format!("{shown} is a slot without a store: this command needs a lease store (sqlite://, redis://, ...)"),
        )),
    }
}

/// The help text that lists every variable the command reads.
pub fn env_help() -> String {
    let mut out = String::from("Environment variables (a flag overrides its variable):\n");
    let width = flags().map(|s| s.env.len()).max().unwrap_or(0);
    for s in flags() {
        out.push_str(&format!(
            "  {:<width$}  {} (default: {})\n",
            s.env, s.doc, s.default
        ));
    }
    out.push_str("\nExit status: 0 on success, 1 when the store or the runtime fails, 2 for bad usage, settings or input.");
    out
}
