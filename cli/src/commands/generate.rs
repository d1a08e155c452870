//! `cosid generate`: shell completions and the man page, made from the clap definitions (hidden: for packagers,
//! and for `scripts/dist.sh`, which puts them in the CLI tarball).

use crate::failure::Failure;
use clap_complete::Shell;
use std::io::Write;

/// Options of `cosid generate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// Print the completion script of SHELL
    Completions {
        /// bash, zsh, fish, powershell or elvish
        #[arg(value_enum, value_name = "SHELL")]
        shell: Shell,
    },
    /// Print the man page cosid(1) (roff), or write it and one page per subcommand (cosid-next(1), ...) into DIR
    Man {
        /// Write cosid.1 and a cosid-COMMAND.1 per subcommand into DIR instead of printing cosid.1
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

/// Writes what was asked for to stdout.
pub fn run(args: &Args, mut command: clap::Command) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match &args.what {
        What::Completions { shell } => {
            clap_complete::generate(*shell, &mut command, "cosid", &mut out);
        }
        // `cosid help` is `cosid --help`: no page of its own, and none named in cosid(1).
        What::Man { dir: None } => {
            clap_mangen::Man::new(command.disable_help_subcommand(true)).render(&mut out)?;
        }
        What::Man { dir: Some(dir) } => {
            clap_mangen::generate_to(command, dir).map_err(|e| {
                Failure::runtime(
                    "IO",
                    format!("writing the man pages into {}: {e}", dir.display()),
                )
            })?;
        }
    }
    out.flush()?;
    Ok(())
}
