//! The files a run leaves behind, and how they are read back.
//!
//! Each worker process (one *incarnation* of a worker: a restart is a new incarnation, and a new lease holder)
//! writes two files into `workers/`:
//!
//! - `w<worker>.<incarnation>.ids`: one 16-byte record per acknowledged id, two little-endian `u64`: the id and
//!   the host's wall clock (ms) when it was written. A record is written (one `write(2)` per batch) before the
//!   worker counts the id as acknowledged, so an id that is not in the file was never handed out. A `SIGKILL` can
//!   only cut the file at a record boundary (a write of a few hundred bytes to a regular file is not split by a
//!   signal); a torn tail is still tolerated and reported.
//! - `w<worker>.<incarnation>.events`: one text line per event, `<wall ms> <NAME> key=value ...`, with a free-text
//!   `reason=` last where there is one. The lease windows the worker was granted (`ACQUIRED`, `RENEWED`) are here.
//!
//! The harness writes `nemesis.log` (one line per fault and per heal) and `run.txt` (the run's settings), in the
//! same `<wall ms> <NAME> key=value ...` form.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Bytes per record of an ids file.
pub const ID_RECORD: usize = 16;

/// The host's wall clock in ms: the one time base of every log (the store's clock is the same host's).
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `w<worker>.<incarnation>`: the stem of an incarnation's files.
pub fn stem(worker: usize, incarnation: usize) -> String {
    format!("w{worker}.{incarnation}")
}

/// The folder of the worker logs of a run.
pub fn workers_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("workers")
}

/// One line of an events, nemesis or run file: a time, a name, fields, and an optional free-text reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Wall clock (ms).
    pub at: u64,
    /// Upper-case name (`ACQUIRED`, `FAULT`, ...).
    pub name: String,
    /// `key=value` fields, in order.
    pub fields: Vec<(String, String)>,
    /// Free text after `reason=`, to the end of the line.
    pub reason: Option<String>,
}

/// A line that does not parse, with where it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub detail: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.detail)
    }
}

impl Line {
    /// A line named `name` at `at`.
    pub fn new(at: u64, name: &str) -> Self {
        Self {
            at,
            name: name.to_owned(),
            fields: Vec::new(),
            reason: None,
        }
    }

    /// Adds a field.
    pub fn field(mut self, key: &str, value: impl fmt::Display) -> Self {
        self.fields.push((key.to_owned(), value.to_string()));
        self
    }

    /// Sets the free-text reason (newlines become spaces).
    pub fn reason(mut self, text: impl fmt::Display) -> Self {
        self.reason = Some(text.to_string().replace(['\n', '\r'], " "));
        self
    }

    /// Parses one line.
    pub fn parse(text: &str) -> Result<Line, String> {
        let (head, reason) = match text.find(" reason=") {
            Some(i) => (&text[..i], Some(text[i + 8..].to_owned())),
            None => (text, None),
        };
        let mut words = head.split_ascii_whitespace();
        let at = words
            .next()
            .ok_or("empty line")?
            .parse::<u64>()
            .map_err(|e| format!("the time is not a number of ms: {e}"))?;
        let name = words
            .next()
            .ok_or("no event name after the time")?
            .to_owned();
        let mut fields = Vec::new();
        for w in words {
            let (k, v) = w
                .split_once('=')
                .ok_or_else(|| format!("field {w:?} is not key=value"))?;
            fields.push((k.to_owned(), v.to_owned()));
        }
        Ok(Line {
            at,
            name,
            fields,
            reason,
        })
    }

    /// A field's text.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A field as a number, or an error naming the field and the line.
    pub fn num<T: std::str::FromStr>(&self, key: &str) -> Result<T, String>
    where
        T::Err: fmt::Display,
    {
        let v = self
            .get(key)
            .ok_or_else(|| format!("{} line has no {key}= field", self.name))?;
        v.parse::<T>()
            .map_err(|e| format!("{} line: {key}={v:?} is not a number: {e}", self.name))
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.at, self.name)?;
        for (k, v) in &self.fields {
            write!(f, " {k}={v}")?;
        }
        if let Some(r) = &self.reason {
            write!(f, " reason={r}")?;
        }
        Ok(())
    }
}

/// Appends lines to a file, one `write(2)` each, so a killed writer leaves whole lines.
#[derive(Debug)]
pub struct LineWriter {
    file: File,
}

impl LineWriter {
    /// Creates (or appends to) `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        let file = File::options().create(true).append(true).open(path)?;
        Ok(Self { file })
    }

    /// Writes one line.
    pub fn write(&mut self, line: &Line) -> io::Result<()> {
        self.file.write_all(format!("{line}\n").as_bytes())
    }
}

/// Reads every line of `path`. A last line without its newline (a writer killed mid-line) is dropped and
/// counted in the second value.
pub fn read_lines(path: &Path) -> io::Result<(Vec<Result<Line, LineError>>, usize)> {
    let mut text = String::new();
    BufReader::new(File::open(path)?).read_to_string(&mut text)?;
    let torn = usize::from(!text.is_empty() && !text.ends_with('\n'));
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if torn == 1 && i == text.lines().count() - 1 {
            break;
        }
        if l.trim().is_empty() {
            continue;
        }
        out.push(Line::parse(l).map_err(|detail| LineError {
            file: path.to_owned(),
            line: i + 1,
            detail,
        }));
    }
    Ok((out, torn))
}

/// Encodes one ids-file record.
pub fn encode_id(id: u64, ack_ms: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&ack_ms.to_le_bytes());
}

/// The records of an ids file, and how many bytes of a torn last record were left over.
pub fn read_ids(path: &Path) -> io::Result<(Vec<(u64, u64)>, usize)> {
    let mut bytes = Vec::new();
    File::open(path)?.read_to_end(&mut bytes)?;
    let whole = bytes.len() / ID_RECORD * ID_RECORD;
    let records = bytes[..whole]
        .chunks_exact(ID_RECORD)
        .map(|r| {
            let id = u64::from_le_bytes(r[..8].try_into().expect("8 bytes"));
            let at = u64::from_le_bytes(r[8..].try_into().expect("8 bytes"));
            (id, at)
        })
        .collect();
    Ok((records, bytes.len() - whole))
}

/// The settings of a run, as `run.txt` keeps them: `key=value` lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunInfo(pub BTreeMap<String, String>);

impl RunInfo {
    /// Sets a value.
    pub fn set(&mut self, key: &str, value: impl fmt::Display) {
        self.0.insert(key.to_owned(), value.to_string());
    }

    /// A value as text.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// A value as a number, or an error naming the key.
    pub fn num<T: std::str::FromStr>(&self, key: &str) -> Result<T, String>
    where
        T::Err: fmt::Display,
    {
        let v = self
            .get(key)
            .ok_or_else(|| format!("run.txt has no {key}= line"))?;
        v.parse()
            .map_err(|e| format!("run.txt: {key}={v:?} is not a number: {e}"))
    }

    /// Writes `run.txt` into `dir`.
    pub fn save(&self, dir: &Path) -> io::Result<()> {
        let mut text = String::new();
        for (k, v) in &self.0 {
            text.push_str(&format!("{k}={v}\n"));
        }
        std::fs::write(dir.join("run.txt"), text)
    }

    /// Reads `run.txt` from `dir`.
    pub fn load(dir: &Path) -> io::Result<Self> {
        let file = File::open(dir.join("run.txt"))?;
        let mut map = BTreeMap::new();
        for line in BufReader::new(file).lines() {
            let line = line?;
            if let Some((k, v)) = line.split_once('=') {
                map.insert(k.to_owned(), v.to_owned());
            }
        }
        Ok(Self(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_with_a_reason() {
        let l = Line::new(12, "SLOT_LOST")
            .field("slot", 1)
            .reason("lease lost: fence 4 != 5\nsecond line");
        let text = l.to_string();
        assert_eq!(
            text,
            "12 SLOT_LOST slot=1 reason=lease lost: fence 4 != 5 second line"
        );
        let back = Line::parse(&text).unwrap();
        assert_eq!(back.num::<u32>("slot").unwrap(), 1);
        assert_eq!(
            back.reason.as_deref(),
            Some("lease lost: fence 4 != 5 second line")
        );
    }

    #[test]
    fn bad_lines_are_errors_that_say_why() {
        assert!(Line::parse("x ACQUIRED")
            .unwrap_err()
            .contains("not a number"));
        assert!(Line::parse("5 ACQUIRED slot")
            .unwrap_err()
            .contains("key=value"));
        let l = Line::parse("5 ACQUIRED slot=x").unwrap();
        assert!(l.num::<u32>("slot").unwrap_err().contains("slot=\"x\""));
        assert!(l.num::<u32>("fence").unwrap_err().contains("no fence="));
    }

    #[test]
    fn a_torn_last_line_and_record_are_dropped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let events = dir.path().join("e");
        std::fs::write(&events, "1 START pid=3\n2 ACQUIRED slot=0 fen").unwrap();
        let (lines, torn) = read_lines(&events).unwrap();
        assert_eq!((lines.len(), torn), (1, 1));
        let ids = dir.path().join("i");
        let mut buf = Vec::new();
        encode_id(7, 100, &mut buf);
        encode_id(8, 101, &mut buf);
        buf.extend_from_slice(&[1, 2, 3]);
        std::fs::write(&ids, &buf).unwrap();
        assert_eq!(read_ids(&ids).unwrap(), (vec![(7, 100), (8, 101)], 3));
    }
}
