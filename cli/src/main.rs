//! `cosid`: lease-safe Snowflake ids from the command line.
//!
//! Every command reads the same configuration as the library (`COSID_*` variables, each overridden by its flag),
//! prints `cosid: error: [CODE] message` on failure (under `--json`, `{"error": {"code": "CODE", "message": "..."}}`),
//! and exits with 1 when the store or the runtime fails and 2 for bad usage, settings or input.

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
    Init(commands::init::Args),
    /// Lift the namespace (or a static state file) past every timestamp of a machine-id deployment (CosId 1.x, 2.x)
    Migrate(commands::migrate::Args),
    /// Serve the lease API over HTTP in front of the store (the `http://` store's server)
    Serve(serve::Args),
    /// Check a store before deploying on it: reachable, durable, clocks in step, namespace settings, free slots
    Doctor(commands::doctor::Args),
    /// Print shell completions or the man page, made from these definitions (for packagers)
    #[command(hide = true)]
    Generate(commands::generate::Args),
}

/// The whole command line: the subcommands, the global flags of the settings, and the variables in every help.
pub fn command() -> clap::Command {
    let help = settings::env_help();
    let mut command = Cli::command()
        .args(settings::args())
        .after_help(help.clone());
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in names {
        command = command.mut_subcommand(name, |sub| sub.after_help(help.clone()));
    }
    command
}

fn main() -> ExitCode {
    let matches = match command().try_get_matches() {
        Ok(m) => m,
        Err(e) if e.use_stderr() && json_in_args() => {
            let text = e.render().to_string();
            let failure = Failure::usage("USAGE", text.trim_end().trim_start_matches("error: "));
            failure.print(true);
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
        Err(e) => {
            // Help and version go to stdout with status 0; usage errors to stderr with status 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let json = matches
        .subcommand()
        .is_some_and(|(_, sub)| sub.try_get_one::<bool>("json").ok().flatten() == Some(&true));
    let outcome = Cli::from_arg_matches(&matches)
        .map_err(|e| Failure::usage("USAGE", e.to_string()))
        .and_then(|cli| run(cli, &matches));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            failure.print(json);
            failure.exit_code()
        }
    }
}

/// Whether `--json` is on the command line (before any `--`): what a usage error clap refused the arguments for
/// goes by, since there are no matches to ask.
fn json_in_args() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

fn run(cli: Cli, matches: &clap::ArgMatches) -> Result<(), Failure> {
    // Read only by the commands that use them: `generate` runs in a packager's environment, which has none.
    let settings = || settings::settings(matches);
    let config = || settings().map(|s| s.config());
    match cli.command {
        Command::Next(args) => commands::next::run(&args, settings()?),
        Command::Parse(args) => commands::parse::run(&args, &config()?),
        Command::Leases(args) => commands::leases::run(&args, &config()?),
        Command::Status(args) => commands::status::run(&args, settings()?),
        Command::Init(args) => commands::init::run(&args, &config()?),
        Command::Serve(args) => serve::run(&args, &config()?),
        Command::Migrate(args) => commands::migrate::run(
            &args,
            &config()?,
            settings::given(matches, "namespace").is_some_and(|n| !n.is_empty()),
        ),
        Command::Doctor(args) => commands::doctor::run(&args, &config()?),
        Command::Generate(args) => commands::generate::run(&args, command()),
    }
}
