//! The `current_time` tool's clock: the system clock, or a fixed instant for deterministic runs
//! (`ORRERY_DEMO_FIXED_TIME`), shown in UTC or a fixed UTC offset.

use jiff::Timestamp;
use jiff::tz::{Offset, TimeZone};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The environment variable that fixes the demo clock (an RFC 3339 instant).
pub const FIXED_TIME_ENV: &str = "ORRERY_DEMO_FIXED_TIME";
/// The largest UTC offset accepted, in hours.
const MAX_OFFSET_HOURS: i32 = 14;

/// Where `current_time` gets the time from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Clock {
    /// The system clock.
    #[default]
    System,
    /// Always this instant.
    Fixed(Timestamp),
}

/// Why a clock or time zone was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    /// `ORRERY_DEMO_FIXED_TIME` is not an RFC 3339 instant.
    #[error("{FIXED_TIME_ENV}='{value}' is not an RFC 3339 time such as 2026-11-29T21:57:04Z")]
    BadFixedTime {
        /// The value found.
        value: String,
    },
    /// The time zone is not UTC or a fixed offset.
    #[error(
        "unknown time zone '{0}'; use UTC or a fixed offset such as +05:30, -08:00 or UTC+2 \
         (between -14:00 and +14:00)"
    )]
    BadTimeZone(String),
}

impl Clock {
    /// A fixed clock from `ORRERY_DEMO_FIXED_TIME` when it is set, else the system clock.
    pub fn from_env() -> Result<Self, ClockError> {
        match std::env::var(FIXED_TIME_ENV) {
            Ok(value) if !value.trim().is_empty() => Self::parse_fixed(&value),
            _ => Ok(Clock::System),
        }
    }

    /// A fixed clock at this RFC 3339 instant.
    pub fn parse_fixed(value: &str) -> Result<Self, ClockError> {
        value
            .trim()
            .parse::<Timestamp>()
            .map(Clock::Fixed)
            .map_err(|_| ClockError::BadFixedTime {
                value: value.to_owned(),
            })
    }

    /// The current instant.
    pub fn now(&self) -> Timestamp {
        match self {
            Clock::System => Timestamp::now(),
            Clock::Fixed(ts) => *ts,
        }
    }
}

/// `UTC`, `Z`, `GMT`, `+05:30`, `-0800`, `+5`, `UTC+2`, `UTC-05:30` → the offset.
pub fn parse_offset(zone: &str) -> Result<Offset, ClockError> {
    let bad = || ClockError::BadTimeZone(zone.to_owned());
    let trimmed = zone.trim();
    let upper = trimmed.to_ascii_uppercase();
    let rest = upper
        .strip_prefix("UTC")
        .or_else(|| upper.strip_prefix("GMT"))
        .unwrap_or(&upper);
    if rest.is_empty() || rest == "Z" {
        return Ok(Offset::UTC);
    }
    // Byte-index splits only on ASCII boundaries: the zone is model input and may hold any
    // character ("é", "+a€").
    let (sign, digits) = if let Some(d) = rest.strip_prefix('+') {
        (1, d)
    } else if let Some(d) = rest.strip_prefix('-') {
        (-1, d)
    } else {
        return Err(bad());
    };
    let (hours, minutes) = match digits.split_once(':') {
        Some((h, m)) => (h, m),
        None if digits.len() == 4 => digits.split_at_checked(2).ok_or_else(bad)?,
        None => (digits, "0"),
    };
    let all_digits =
        |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(hours) || !all_digits(minutes) {
        return Err(bad());
    }
    let hours: i32 = hours.parse().map_err(|_| bad())?;
    let minutes: i32 = minutes.parse().map_err(|_| bad())?;
    if minutes >= 60 || hours * 60 + minutes > MAX_OFFSET_HOURS * 60 {
        return Err(bad());
    }
    Offset::from_seconds(sign * (hours * 3600 + minutes * 60)).map_err(|_| bad())
}

/// The time as `current_time` reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CurrentTime {
    /// RFC 3339 with seconds precision, e.g. `2026-11-29T21:57:04Z` or `…T03:27:04+05:30`.
    pub iso8601: String,
    /// `UTC` or the offset, e.g. `+05:30`.
    pub timezone: String,
    /// Seconds since the Unix epoch.
    pub unix_seconds: i64,
    /// The local date, `YYYY-MM-DD`.
    pub date: String,
    /// The local time, `HH:MM:SS`.
    pub time: String,
    /// The local weekday, e.g. `Sunday`.
    pub weekday: String,
}

/// `now` shown in `zone` (UTC when absent).
pub fn current_time(now: Timestamp, zone: Option<&str>) -> Result<CurrentTime, ClockError> {
    let offset = match zone {
        Some(z) => parse_offset(z)?,
        None => Offset::UTC,
    };
    let zoned = now.to_zoned(TimeZone::fixed(offset));
    let is_utc = offset == Offset::UTC;
    let suffix = if is_utc {
        "Z".to_owned()
    } else {
        zoned.strftime("%:z").to_string()
    };
    Ok(CurrentTime {
        iso8601: format!("{}{suffix}", zoned.strftime("%Y-%m-%dT%H:%M:%S")),
        timezone: if is_utc { "UTC".to_owned() } else { suffix },
        unix_seconds: now.as_second(),
        date: zoned.strftime("%Y-%m-%d").to_string(),
        time: zoned.strftime("%H:%M:%S").to_string(),
        weekday: zoned.strftime("%A").to_string(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn fixed() -> Timestamp {
        "2026-11-29T21:57:04.5Z".parse().unwrap()
    }

    #[test]
    fn time_zones_are_utc_or_fixed_offsets() {
        let table = [
            (None, "2026-11-29T21:57:04Z", "UTC", "Sunday"),
            (Some("UTC"), "2026-11-29T21:57:04Z", "UTC", "Sunday"),
            (Some("z"), "2026-11-29T21:57:04Z", "UTC", "Sunday"),
            (
                Some("+05:30"),
                "2026-11-30T03:27:04+05:30",
                "+05:30",
                "Monday",
            ),
            (
                Some("-0800"),
                "2026-11-29T13:57:04-08:00",
                "-08:00",
                "Sunday",
            ),
            (
                Some("UTC+2"),
                "2026-11-29T23:57:04+02:00",
                "+02:00",
                "Sunday",
            ),
            (
                Some("gmt-03:30"),
                "2026-11-29T18:27:04-03:30",
                "-03:30",
                "Sunday",
            ),
            (Some("+14"), "2026-11-30T11:57:04+14:00", "+14:00", "Monday"),
        ];
        for (zone, iso, tz, weekday) in table {
            let t = current_time(fixed(), zone).unwrap();
            assert_eq!(
                (t.iso8601.as_str(), t.timezone.as_str(), t.weekday.as_str()),
                (iso, tz, weekday),
                "{zone:?}"
            );
            assert_eq!(t.unix_seconds, 1_795_989_424);
        }
    }

    #[test]
    fn named_and_out_of_range_zones_are_refused() {
        for zone in [
            "Europe/Berlin",
            "+15:00",
            "+05:60",
            "5",
            "UTC+",
            "+1:2:3",
            "+123",
            // Non-ASCII input must be refused, not split inside a character.
            "é",
            "UTCé",
            "+a€",
            "-€1",
            "+0€",
            "+٠٥:٣٠",
        ] {
            assert!(
                matches!(
                    current_time(fixed(), Some(zone)),
                    Err(ClockError::BadTimeZone(_))
                ),
                "{zone}"
            );
        }
    }

    #[test]
    fn a_fixed_clock_always_answers_the_same_instant() {
        let clock = Clock::parse_fixed("2026-11-29T21:57:04Z").unwrap();
        assert_eq!(clock.now(), clock.now());
        assert_eq!(clock.now().as_second(), 1_795_989_424);
        assert!(matches!(
            Clock::parse_fixed("yesterday"),
            Err(ClockError::BadFixedTime { .. })
        ));
    }
}
