//! Durations written like `500ms`, `30s`, `2m` or `1h`, and sizes like `16MiB`: the value parsers of
//! the flags that take them.

use std::time::Duration;

/// Parses a duration written as a number and a unit: `ms`, `s`, `m` or `h` (`1.5s` works too).
pub(crate) fn duration(input: &str) -> Result<Duration, String> {
    let invalid = || {
        format!("invalid duration `{input}`: write a number and a unit, like 500ms, 30s, 2m or 1h")
    };
    let text = input.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(invalid)?;
    let (number, unit) = text.split_at(split);
    let factor = match unit.trim() {
        "ms" => 0.001,
        "s" | "sec" | "secs" => 1.0,
        "m" | "min" | "mins" => 60.0,
        "h" => 3600.0,
        _ => return Err(invalid()),
    };
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
        return Err(invalid());
    }
    let value: f64 = number.parse().map_err(|_| invalid())?;
    Duration::try_from_secs_f64(value * factor).map_err(|_| invalid())
}

/// Parses a size in bytes: a plain number, or one with a unit `k`/`KiB`, `M`/`MiB` or `G`/`GiB`
/// (powers of 1024; `KB`, `MB` and `GB` are read the same way), as the type the flag wants.
pub(crate) fn size<T: TryFrom<u64>>(input: &str) -> Result<T, String> {
    let invalid = || {
        format!(
            "invalid size `{input}`: write a number of bytes, optionally with a unit like 64KiB or 16MiB"
        )
    };
    let text = input.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(invalid()),
    };
    let value: u64 = number.parse().map_err(|_| invalid())?;
    let bytes = value.checked_mul(factor).ok_or_else(invalid)?;
    T::try_from(bytes).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let good: &[(&str, Duration)] = &[
            ("500ms", Duration::from_millis(500)),
            ("30s", Duration::from_secs(30)),
            ("2m", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
            ("1.5s", Duration::from_millis(1500)),
            (" 0s ", Duration::ZERO),
        ];
        for (input, want) in good {
            assert_eq!(duration(input).unwrap(), *want, "{input}");
        }
        for bad in ["", "30", "s", "1x", "-1s", ".5s", "1..2s", "5 parsecs"] {
            let err = duration(bad).unwrap_err();
            assert!(
                err.starts_with(&format!("invalid duration `{bad}`")),
                "{bad}"
            );
        }
    }

    #[test]
    fn sizes() {
        let good: &[(&str, u64)] = &[
            ("0", 0),
            ("1000", 1000),
            ("64k", 65536),
            ("16MiB", 16 << 20),
            ("1 GB", 1 << 30),
        ];
        for (input, want) in good {
            assert_eq!(size::<u64>(input).unwrap(), *want, "{input}");
        }
        for bad in [
            "",
            "MiB",
            "1.5M",
            "-1",
            "12 parsecs",
            "99999999999999999999G",
            "17179869184G",
        ] {
            let err = size::<u64>(bad).unwrap_err();
            assert!(err.starts_with(&format!("invalid size `{bad}`")), "{bad}");
        }
        // A size the flag's type cannot hold is refused, not cut.
        assert!(
            size::<u16>("64k")
                .unwrap_err()
                .starts_with("invalid size `64k`")
        );
        assert_eq!(size::<u16>("63k"), Ok(63 * 1024));
    }
}
