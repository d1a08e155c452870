//! Showing times and tables to a person.

use time::macros::format_description;
use time::OffsetDateTime;

/// Unix milliseconds as RFC 3339 UTC with milliseconds (`2024-01-31T12:00:00.123Z`); the bare number past year
/// 9999.
pub fn rfc3339(ms: u64) -> String {
    let format =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    // Past 9999 checked here, not left to `time`, which represents such years when its `large-dates` feature is
    // on (the MongoDB driver turns it on in a build with that store).
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .filter(|t| t.year() <= 9999)
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| format!("{ms} ms"))
}

/// A signed duration in milliseconds as seconds with a millisecond fraction (`12.345s`, `-0.500s`).
pub fn seconds(ms: i128) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    format!("{sign}{}.{:03}s", ms / 1000, ms % 1000)
}

/// `later - earlier` in milliseconds, signed.
pub fn diff(later: u64, earlier: u64) -> i128 {
    i128::from(later) - i128::from(earlier)
}

/// Rows of cells as left-aligned columns separated by two spaces, without trailing spaces.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            let pad = widths[c].saturating_sub(cell.chars().count());
            line.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_times() {
        assert_eq!(rfc3339(1_577_203_200_000), "2019-12-24T16:00:00.000Z");
        assert_eq!(rfc3339(1_704_067_200_123), "2024-01-01T00:00:00.123Z");
        assert_eq!(rfc3339(u64::MAX), format!("{} ms", u64::MAX));
        // The last millisecond of 9999, then the first of 10000 (a year `time` represents with `large-dates`).
        assert_eq!(rfc3339(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(253_402_300_800_000), "253402300800000 ms");
        assert_eq!(seconds(12_345), "12.345s");
        assert_eq!(seconds(-500), "-0.500s");
    }

    #[test]
    fn aligns_columns() {
        let t = table(&[
            vec!["A".into(), "BB".into(), "C".into()],
            vec!["aaa".into(), "b".into(), String::new()],
        ]);
        assert_eq!(t, "A    BB  C\naaa  b\n");
    }
}
