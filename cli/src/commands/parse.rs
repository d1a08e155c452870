//! `cosid parse`: read an id in any of its forms and show its fields.

use super::{describe_layout, Form};
use crate::failure::Failure;
use crate::show::rfc3339;
use cosid::{Config, Id, IdError, Layout};
use std::io::Write;

/// Options of `cosid parse`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The id: decimal (7150089728004620289), friendly (20240101000000123-3-7) or base-62 (0Ah5bC3dE9f)
    #[arg(value_name = "ID", allow_hyphen_values = true)]
    id: String,

    /// Read ID only in this form, instead of trying decimal, friendly and base-62 in turn
    #[arg(long = "as", value_enum, value_name = "FORM")]
    form: Option<Form>,

    /// Print one JSON object
    #[arg(long)]
    json: bool,
}

/// Reads the id with the configured layout and prints its fields and forms.
pub fn run(args: &Args, config: &Config) -> Result<(), Failure> {
    let layout = config.layout;
    let forms: Vec<Form> = match args.form {
        Some(f) => vec![f],
        None => vec![Form::Dec, Form::Friendly, Form::Base62],
    };
    let Reading { form, id, others } = read(&layout, &args.id, &forms)?;
    let parts = layout.decompose(id).map_err(cosid::Error::from)?;
    let friendly = layout.to_friendly(id).map_err(cosid::Error::from)?;
    let base62 = id.to_base62();
    let mut out = std::io::stdout().lock();
    if args.json {
        let value = serde_json::json!({
            "input": args.id,
            "form": form.name(),
            "also_valid_as": others.iter().map(|(f, id)| serde_json::json!({"form": f.name(), "decimal": id.as_u64()})).collect::<Vec<_>>(),
            "decimal": id.as_u64().to_string(),
            "friendly": friendly,
            "base62": base62,
            "timestamp": rfc3339(parts.timestamp_ms),
            "unix_ms": parts.timestamp_ms,
            "tick": parts.tick,
            "slot": parts.slot,
            "sequence": parts.sequence,
        });
        writeln!(out, "{value}")?;
    } else {
        let rows = [
            ("read as", form.name().to_owned()),
            ("decimal", id.as_u64().to_string()),
            ("friendly", friendly),
            ("base62", base62),
            ("timestamp", rfc3339(parts.timestamp_ms)),
            ("unix_ms", parts.timestamp_ms.to_string()),
            ("tick", parts.tick.to_string()),
            ("slot", parts.slot.to_string()),
            ("sequence", parts.sequence.to_string()),
            ("layout", describe_layout(&layout)),
        ];
        for (name, value) in rows {
            writeln!(out, "{name:<10} {value}")?;
        }
    }
    for (other, other_id) in &others {
        eprintln!(
            "cosid: note: {:?} is also a valid {} id ({}); use --as {} to read it so",
            args.id,
            other.name(),
            other_id,
            other.name()
        );
    }
    Ok(())
}

/// How the text was read.
#[derive(Debug, PartialEq, Eq)]
struct Reading {
    /// The form that read it first.
    form: Form,
    /// The id it reads as.
    id: Id,
    /// Other forms that also read it, and as which id.
    others: Vec<(Form, Id)>,
}

/// Tries each form strictly, in order. The first that reads the text as an id of `layout` wins; the others that
/// also do are returned so the caller can point out the ambiguity (an 11-digit number is also base-62 text).
fn read(layout: &Layout, text: &str, forms: &[Form]) -> Result<Reading, Failure> {
    let mut read = Vec::new();
    let mut errors = Vec::new();
    for &form in forms {
        match read_as(layout, text, form) {
            Ok(id) => read.push((form, id)),
            Err(e) => errors.push(format!("as {}: {e}", form.name())),
        }
    }
    if read.is_empty() {
        let shown: String = text.chars().take(80).collect();
        return Err(Failure::usage(
            "INVALID_ID",
            format!(
                "{shown:?} is not an id of the layout {}: {}",
                describe_layout(layout),
                errors.join("; ")
            ),
        ));
    }
    let (form, id) = read.remove(0);
    Ok(Reading {
        form,
        id,
        others: read,
    })
}

fn read_as(layout: &Layout, text: &str, form: Form) -> Result<Id, IdError> {
    let id = match form {
        Form::Dec => Id::parse_decimal(text)?,
        Form::Base62 => Id::from_base62(text)?,
        Form::Friendly => layout.parse_friendly(text)?,
    };
    // A number the layout could not have made (sign bit, bits above its width) is not one of its ids.
    layout.decompose(id)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Form; 3] = [Form::Dec, Form::Friendly, Form::Base62];

    #[test]
    fn reads_each_form_and_names_it() {
        let l = Layout::millis();
        let id = l.compose(123_456, 7, 89).unwrap();
        let only = |form| Reading {
            form,
            id,
            others: vec![],
        };
        assert_eq!(read(&l, &id.to_string(), &ALL).unwrap(), only(Form::Dec));
        let friendly = l.to_friendly(id).unwrap();
        assert_eq!(read(&l, &friendly, &ALL).unwrap(), only(Form::Friendly));
        assert_eq!(read(&l, &id.to_base62(), &ALL).unwrap(), only(Form::Base62));
    }

    #[test]
    fn eleven_digits_read_as_decimal_and_report_base62() {
        let l = Layout::millis();
        let as_base62 = Id::from_base62("12345678901").unwrap();
        assert_eq!(
            read(&l, "12345678901", &ALL).unwrap(),
            Reading {
                form: Form::Dec,
                id: Id::from_u64(12_345_678_901),
                others: vec![(Form::Base62, as_base62)],
            }
        );
        let forced = read(&l, "12345678901", &[Form::Base62]).unwrap();
        assert_eq!((forced.form, forced.id), (Form::Base62, as_base62));
    }

    #[test]
    fn refuses_every_malformed_input_with_each_reason() {
        let l = Layout::millis();
        for bad in [
            "",
            "-1",
            "+5",
            "007",
            " 5",
            "5 ",
            "abc",
            "٣",
            "18446744073709551616",
            "9223372036854775808",
            "20241301000000000-1-1",
            "zzzzzzzzzzz",
        ] {
            let e = read(&l, bad, &ALL).unwrap_err().to_string();
            assert!(e.starts_with("[INVALID_ID]"), "{bad:?}: {e}");
            assert!(
                e.contains("as decimal:") && e.contains("as friendly:") && e.contains("as base62:"),
                "{e}"
            );
        }
        // A value above the js-safe layout's 53 bits is not one of its ids.
        let e = read(&Layout::js_safe(), &(1u64 << 60).to_string(), &[Form::Dec]).unwrap_err();
        assert!(e.to_string().contains("53"), "{e}");
    }
}
