//! Unit conversion for the `convert_units` tool: length, mass, temperature and data size.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a unit measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dimension {
    /// Metres and friends.
    Length,
    /// Kilograms and friends.
    Mass,
    /// Celsius, Fahrenheit, Kelvin.
    Temperature,
    /// Bits and bytes.
    DataSize,
}

impl Dimension {
    fn name(self) -> &'static str {
        match self {
            Dimension::Length => "length",
            Dimension::Mass => "mass",
            Dimension::Temperature => "temperature",
            Dimension::DataSize => "data size",
        }
    }
}

struct Unit {
    symbol: &'static str,
    names: &'static [&'static str],
    dimension: Dimension,
    /// Base units per unit (metres, kilograms, bytes); for temperature, unused.
    factor: f64,
}

const fn unit(
    symbol: &'static str,
    names: &'static [&'static str],
    dimension: Dimension,
    factor: f64,
) -> Unit {
    Unit {
        symbol,
        names,
        dimension,
        factor,
    }
}

use Dimension::{DataSize, Length, Mass, Temperature};

const UNITS: &[Unit] = &[
    unit("m", &["meter", "meters", "metre", "metres"], Length, 1.0),
    unit(
        "km",
        &["kilometer", "kilometers", "kilometre", "kilometres"],
        Length,
        1000.0,
    ),
    unit(
        "cm",
        &["centimeter", "centimeters", "centimetre", "centimetres"],
        Length,
        0.01,
    ),
    unit(
        "mm",
        &["millimeter", "millimeters", "millimetre", "millimetres"],
        Length,
        0.001,
    ),
    unit("mi", &["mile", "miles"], Length, 1609.344),
    unit("yd", &["yard", "yards"], Length, 0.9144),
    unit("ft", &["foot", "feet"], Length, 0.3048),
    unit("in", &["inch", "inches"], Length, 0.0254),
    unit("kg", &["kilogram", "kilograms"], Mass, 1.0),
    unit("g", &["gram", "grams"], Mass, 0.001),
    unit("mg", &["milligram", "milligrams"], Mass, 0.000_001),
    unit("t", &["tonne", "tonnes", "metric ton"], Mass, 1000.0),
    unit("lb", &["lbs", "pound", "pounds"], Mass, 0.453_592_37),
    unit("oz", &["ounce", "ounces"], Mass, 0.028_349_523_125),
    unit("C", &["°C", "degC", "celsius"], Temperature, 1.0),
    unit("F", &["°F", "degF", "fahrenheit"], Temperature, 1.0),
    unit("K", &["kelvin"], Temperature, 1.0),
    unit("bit", &["bits"], DataSize, 0.125),
    unit("B", &["byte", "bytes"], DataSize, 1.0),
    unit("KB", &["kilobyte", "kilobytes"], DataSize, 1e3),
    unit("MB", &["megabyte", "megabytes"], DataSize, 1e6),
    unit("GB", &["gigabyte", "gigabytes"], DataSize, 1e9),
    unit("TB", &["terabyte", "terabytes"], DataSize, 1e12),
    unit("KiB", &["kibibyte", "kibibytes"], DataSize, 1024.0),
    unit("MiB", &["mebibyte", "mebibytes"], DataSize, 1_048_576.0),
    unit("GiB", &["gibibyte", "gibibytes"], DataSize, 1_073_741_824.0),
    unit(
        "TiB",
        &["tebibyte", "tebibytes"],
        DataSize,
        1_099_511_627_776.0,
    ),
];

/// Why a conversion was refused.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum UnitError {
    /// Not a unit this tool knows.
    #[error("unknown unit '{unit}'; known units: {}", known_units())]
    Unknown {
        /// What was given.
        unit: String,
    },
    /// The units measure different things.
    #[error("cannot convert {from} ({from_dim}) to {to} ({to_dim})")]
    Incompatible {
        /// Source unit.
        from: &'static str,
        /// Its dimension.
        from_dim: &'static str,
        /// Target unit.
        to: &'static str,
        /// Its dimension.
        to_dim: &'static str,
    },
    /// NaN or infinite.
    #[error("the value must be a finite number")]
    NotFinite,
    /// Colder than absolute zero.
    #[error("{value} {unit} is below absolute zero")]
    BelowAbsoluteZero {
        /// The value.
        value: String,
        /// Its unit.
        unit: &'static str,
    },
}

/// The symbols of every known unit, comma-separated.
pub fn known_units() -> String {
    UNITS
        .iter()
        .map(|u| u.symbol)
        .collect::<Vec<_>>()
        .join(", ")
}

fn find(name: &str) -> Result<&'static Unit, UnitError> {
    let name = name.trim();
    UNITS
        .iter()
        .find(|u| u.symbol == name)
        .or_else(|| {
            UNITS.iter().find(|u| {
                u.symbol.eq_ignore_ascii_case(name)
                    || u.names.iter().any(|n| n.eq_ignore_ascii_case(name))
            })
        })
        .ok_or_else(|| UnitError::Unknown {
            unit: name.to_owned(),
        })
}

/// A conversion's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Conversion {
    /// The value converted.
    pub value: f64,
    /// Source unit symbol.
    pub from: String,
    /// Target unit symbol.
    pub to: String,
    /// The converted value.
    pub result: f64,
    /// The conversion as a sentence, e.g. `5 km = 3.106856 mi`.
    pub text: String,
}

fn to_kelvin(value: f64, symbol: &str) -> f64 {
    match symbol {
        "C" => value + 273.15,
        "F" => (value - 32.0) * 5.0 / 9.0 + 273.15,
        _ => value,
    }
}

fn from_kelvin(kelvin: f64, symbol: &str) -> f64 {
    match symbol {
        "C" => kelvin - 273.15,
        "F" => (kelvin - 273.15) * 9.0 / 5.0 + 32.0,
        _ => kelvin,
    }
}

/// A number with at most six decimals and no trailing zeros; scientific notation for very
/// large or small magnitudes.
pub fn format_number(x: f64) -> String {
    let magnitude = x.abs();
    if magnitude != 0.0 && !(1e-6..1e15).contains(&magnitude) {
        return format!("{x:.6e}");
    }
    let fixed = format!("{x:.6}");
    let trimmed = fixed.trim_end_matches('0').trim_end_matches('.');
    match trimmed {
        "-0" | "" => "0".to_owned(),
        other => other.to_owned(),
    }
}

/// Converts `value` from one unit to another of the same dimension.
pub fn convert(value: f64, from: &str, to: &str) -> Result<Conversion, UnitError> {
    if !value.is_finite() {
        return Err(UnitError::NotFinite);
    }
    let (f, t) = (find(from)?, find(to)?);
    if f.dimension != t.dimension {
        return Err(UnitError::Incompatible {
            from: f.symbol,
            from_dim: f.dimension.name(),
            to: t.symbol,
            to_dim: t.dimension.name(),
        });
    }
    let result = if f.dimension == Temperature {
        let kelvin = to_kelvin(value, f.symbol);
        if kelvin < -1e-9 {
            return Err(UnitError::BelowAbsoluteZero {
                value: format_number(value),
                unit: f.symbol,
            });
        }
        from_kelvin(kelvin, t.symbol)
    } else {
        value * f.factor / t.factor
    };
    if !result.is_finite() {
        return Err(UnitError::NotFinite);
    }
    Ok(Conversion {
        value,
        from: f.symbol.to_owned(),
        to: t.symbol.to_owned(),
        result,
        text: format!(
            "{} {} = {} {}",
            format_number(value),
            f.symbol,
            format_number(result),
            t.symbol
        ),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn conversions_give_the_expected_text() {
        let table = [
            (5.0, "km", "mi", "5 km = 3.106856 mi"),
            (1.0, "mile", "m", "1 mi = 1609.344 m"),
            (12.0, "in", "ft", "12 in = 1 ft"),
            (2.0, "lb", "kg", "2 lb = 0.907185 kg"),
            (1.0, "t", "g", "1 t = 1000000 g"),
            (100.0, "C", "F", "100 C = 212 F"),
            (-40.0, "fahrenheit", "celsius", "-40 F = -40 C"),
            (0.0, "K", "C", "0 K = -273.15 C"),
            (1.0, "GiB", "MB", "1 GiB = 1073.741824 MB"),
            (8.0, "bits", "B", "8 bit = 1 B"),
            (1.0, "TB", "TiB", "1 TB = 0.909495 TiB"),
            (1e20, "mm", "km", "1.000000e20 mm = 100000000000000 km"),
            (1e22, "mm", "km", "1.000000e22 mm = 1.000000e16 km"),
        ];
        for (value, from, to, text) in table {
            assert_eq!(
                convert(value, from, to).unwrap().text,
                text,
                "{value} {from} -> {to}"
            );
        }
    }

    #[test]
    fn exact_symbols_win_over_case_insensitive_matches() {
        assert_eq!(convert(1.0, "mi", "m").unwrap().from, "mi");
        assert_eq!(convert(1.0, "MB", "KB").unwrap().result, 1000.0);
        assert_eq!(convert(1.0, "mb", "kb").unwrap().result, 1000.0);
    }

    #[test]
    fn unknown_incompatible_and_impossible_conversions_are_refused() {
        assert!(
            matches!(convert(1.0, "furlong", "m"), Err(UnitError::Unknown { unit }) if unit == "furlong")
        );
        assert!(matches!(
            convert(1.0, "kg", "m"),
            Err(UnitError::Incompatible {
                from: "kg",
                to: "m",
                ..
            })
        ));
        assert_eq!(convert(f64::NAN, "m", "km"), Err(UnitError::NotFinite));
        assert!(matches!(
            convert(-500.0, "C", "K"),
            Err(UnitError::BelowAbsoluteZero { .. })
        ));
        let msg = convert(1.0, "parsec", "m").unwrap_err().to_string();
        assert!(msg.contains("known units: m, km"), "{msg}");
    }

    #[test]
    fn numbers_are_formatted_deterministically() {
        for (x, s) in [
            (0.0, "0"),
            (-0.0, "0"),
            (1.5, "1.5"),
            (2.0, "2"),
            (1e-7, "1.000000e-7"),
            (-3.25, "-3.25"),
        ] {
            assert_eq!(format_number(x), s);
        }
    }
}
