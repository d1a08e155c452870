//! `cosid next`: issue ids and print them.

use super::Form;
use crate::failure::Failure;
use cosid::host::{Holder, Settings};
use cosid::{Id, Layout};
use std::io::{self, BufWriter, Write};

/// Ids asked of the runtime per batch call.
const CHUNK: u64 = 4096;

/// Options of `cosid next`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// How many ids to print
    #[arg(short = 'n', long = "count", value_name = "N", default_value_t = 1)]
    count: u64,

    /// Text form of each id
    #[arg(long, value_enum, value_name = "FORM", default_value_t = Form::Dec)]
    format: Form,
}

/// Why printing stopped early.
enum Halt {
    /// The reader went away (`cosid next -n 1000000 | head`): not an error.
    Closed,
    Failed(Failure),
}

impl From<io::Error> for Halt {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Halt::Closed
        } else {
            Halt::Failed(e.into())
        }
    }
}

impl From<cosid::Error> for Halt {
    fn from(e: cosid::Error) -> Self {
        Halt::Failed(e.into())
    }
}

/// Starts a runtime, prints `count` ids, and shuts the runtime down, which releases the slot with the last
/// timestamp issued (also when printing fails).
pub fn run(args: &Args, settings: Settings) -> Result<(), Failure> {
    let (rt, _) = super::start_runtime(settings)?;
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
    let printed = write_ids(&rt, args, &mut out).and_then(|()| out.flush().map_err(Halt::from));
    rt.shutdown()?;
    match printed {
        Ok(()) | Err(Halt::Closed) => Ok(()),
        Err(Halt::Failed(f)) => Err(f),
    }
}

fn write_ids(rt: &Holder, args: &Args, out: &mut impl Write) -> Result<(), Halt> {
    let layout = rt.layout().map_err(|e| Halt::Failed(e.into()))?;
    let mut buf = vec![Id::from_u64(0); args.count.min(CHUNK) as usize];
    let mut left = args.count;
    while left > 0 {
        let chunk = &mut buf[..left.min(CHUNK) as usize];
        rt.fill(chunk).map_err(|e| Halt::Failed(e.into()))?;
        for &id in chunk.iter() {
            write_id(out, id, args.format, &layout)?;
        }
        left -= chunk.len() as u64;
    }
    Ok(())
}

fn write_id(out: &mut impl Write, id: Id, form: Form, layout: &Layout) -> Result<(), Halt> {
    match form {
        Form::Dec => writeln!(out, "{}", id.as_u64())?,
        Form::Base62 => {
            let mut text = [0u8; 11];
            id.write_base62(&mut text);
            out.write_all(&text)?;
            out.write_all(b"\n")?;
        }
        Form::Friendly => {
            let text = layout.to_friendly(id).map_err(cosid::Error::from)?;
            writeln!(out, "{text}")?;
        }
    }
    Ok(())
}
