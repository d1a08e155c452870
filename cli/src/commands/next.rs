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

    /// Print one JSON object: {"format": "decimal", "ids": ["7150089728004620289", ...]} (decimal ids as strings:
    /// they exceed JavaScript's exact integers)
    #[arg(long)]
    json: bool,
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
    if args.json {
        // Written as the ids come, like the lines: a million ids need no array in memory.
        write!(out, "{{\"format\":\"{}\",\"ids\":[", args.format.name())?;
    }
    let mut first = true;
    while left > 0 {
        let chunk = &mut buf[..left.min(CHUNK) as usize];
        rt.fill(chunk).map_err(|e| Halt::Failed(e.into()))?;
        for &id in chunk.iter() {
            let (before, after): (&[u8], &[u8]) = match (args.json, first) {
                (false, _) => (b"", b"\n"),
                (true, true) => (b"\"", b"\""),
                (true, false) => (b",\"", b"\""),
            };
            out.write_all(before)?;
            write_id(out, id, args.format, &layout)?;
            out.write_all(after)?;
            first = false;
        }
        left -= chunk.len() as u64;
    }
    if args.json {
        out.write_all(b"]}\n")?;
    }
    Ok(())
}

/// One id in `form`, alone (no separator): none of the forms needs escaping in JSON.
fn write_id(out: &mut impl Write, id: Id, form: Form, layout: &Layout) -> Result<(), Halt> {
    match form {
        Form::Dec => write!(out, "{}", id.as_u64())?,
        Form::Base62 => {
            let mut text = [0u8; 11];
            id.write_base62(&mut text);
            out.write_all(&text)?;
        }
        Form::Friendly => {
            let text = layout.to_friendly(id).map_err(cosid::Error::from)?;
            write!(out, "{text}")?;
        }
    }
    Ok(())
}
