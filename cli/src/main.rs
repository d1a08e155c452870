//! `cosid`: lease-safe Snowflake ids from the command line.
//!
//! Every command reads the same configuration as the library (`COSID_*` variables, each overridden by its flag),
//! prints `cosid: error: [CODE] message` on failure, and exits with 1 when the store or the runtime fails and 2
//! for bad usage, settings or input.

mod commands;
mod failure;
mod serve;
mod settings;
mod show;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use failure::Failure;
use std::process::ExitCode;

/// Lease-safe Snowflake ids: unique, time-ordered 64-bit ids for many processes at once.
#[derive(Debug, Parser)]
#[command(name = "cosid", version)]
struct Cli {
    // The global flags are `settings::args()`, one per setting of the host layer's table.
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Issue ids on a leased slot and print them, one per line; then release the slot
    Next(commands::next::Args),
    /// Read an id (decimal, friendly or base-62) and print its fields and its other forms
    Parse(commands::parse::Args),
    /// Print every slot record of the namespace, the namespace record and the store's clock
    Leases(commands::leases::Args),
    /// Start a runtime, print its lease and state, and release it
    Status(commands::status::Args),
    /// Create the store's schema
    Init,
    /// Lift the namespace (or a static state file) past every timestamp of a machine-id (4.x) deployment
    Migrate(commands::migrate::Args),
    /// Serve the lease API over HTTP in front of the store (the `http://` store's server)
    Serve(serve::Args),
}

fn main() -> ExitCode {
    let help = settings::env_help();
    let mut command = Cli::command()
        .args(settings::args())
        .after_help(help.clone());
    for name in [
        "next", "parse", "leases", "status", "init", "migrate", "serve",
    ] {
        command = command.mut_subcommand(name, |sub| sub.after_help(help.clone()));
    }
    let matches = match command.try_get_matches() {
        Ok(m) => m,
        Err(e) => {
            // Help and version go to stdout with status 0; usage errors to stderr with status 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let outcome = Cli::from_arg_matches(&matches)
        .map_err(|e| Failure::usage("USAGE", e.to_string()))
        .and_then(|cli| run(cli, &matches));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("cosid: error: {failure}");
            failure.exit_code()
        }
    }
}

fn run(cli: Cli, matches: &clap::ArgMatches) -> Result<(), Failure> {
    let settings = settings::settings(matches)?;
    let config = settings.config();
    match cli.command {
        Command::Next(args) => commands::next::run(&args, settings),
        Command::Parse(args) => commands::parse::run(&args, &config),
        Command::Leases(args) => commands::leases::run(&args, &config),
        Command::Status(args) => commands::status::run(&args, settings),
        Command::Init => commands::init::run(&config),
        Command::Serve(args) => serve::run(&args, &config),
        Command::Migrate(args) => commands::migrate::run(
            &args,
            &config,
            settings::given(matches, "namespace").is_some_and(|n| !n.is_empty()),
        ),
    }
}
