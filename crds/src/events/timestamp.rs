//! The trace events' timestamp text, `2026-11-29T23:01:02.345Z` (RFC 3339, UTC, to the
//! millisecond), written digit by digit from the milliseconds since the Unix epoch: every trace
//! event and every JSON log line carries one, and this costs about an eighth of a general format
//! string (`docs/benchmarks.md`, section 7).

/// `ms` milliseconds after 1970-01-01T00:00:00Z as `YYYY-MM-DDTHH:MM:SS.mmmZ` (years up to
/// 9999, the most four digits hold).
#[inline]
pub fn format_epoch_millis(ms: u64) -> String {
    const MS_PER_DAY: u64 = 86_400_000;
    let (days, in_day) = (ms / MS_PER_DAY, ms % MS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute) = (in_day / 3_600_000, in_day / 60_000 % 60);
    let (second, milli) = (in_day / 1000 % 60, in_day % 1000);
    let mut out = [0u8; 24];
    let mut put = |at: usize, value: u64, width: usize| {
        let mut v = value;
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, hour, 2);
    put(14, minute, 2);
    put(17, second, 2);
    put(20, milli, 3);
    for (at, sep) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
    ] {
        out[at] = sep;
    }
    out[23] = b'Z';
    out.iter().map(|&b| char::from(b)).collect()
}

/// The proleptic Gregorian (year, month, day) of a day number counted from 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::format_epoch_millis;

    #[test]
    fn epoch_milliseconds_are_rfc3339_in_utc_across_leap_days_and_centuries() {
        for (ms, text) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_007, "2000-02-29T00:00:00.007Z"),
            (1_796_457_000_250, "2026-12-05T07:50:00.250Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
        ] {
            assert_eq!(format_epoch_millis(ms), text, "{ms}");
        }
    }
}
