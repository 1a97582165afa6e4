//! Parsers for the units on the command line and in suite files: durations, sizes and
//! costs.

use std::time::Duration;

use crate::error::EvalError;

/// The longest duration [`parse_duration`] accepts: ten years. Every timeout, grace period
/// and delay hyoka takes is far shorter (a timeout of `0` disables it), and a longer one
/// only comes from a typo or a probe; refusing it up front keeps every deadline computable.
pub const MAX_DURATION: Duration = Duration::from_hours(10 * 365 * 24);

/// Parses a humantime duration (`30s`, `10m`, `1h 30m`, `250ms`) of at most
/// [`MAX_DURATION`]. A bare `0` is zero.
///
/// # Errors
/// [`EvalError::InvalidValue`] naming the text, with examples, or the limit.
pub fn parse_duration(text: &str) -> Result<Duration, EvalError> {
    let trimmed = text.trim();
    if trimmed == "0" {
        return Ok(Duration::ZERO);
    }
    if trimmed.starts_with('-') {
        return Err(EvalError::invalid("duration", text, "must not be negative"));
    }
    let duration = humantime::parse_duration(trimmed).map_err(|err| {
        EvalError::invalid("duration", text, format!("{err} (examples: 30s, 10m, 1h)"))
    })?;
    if duration > MAX_DURATION {
        return Err(EvalError::invalid(
            "duration",
            text,
            "too long: at most 10 years (3650d)",
        ));
    }
    Ok(duration)
}

/// Parses a cost in US dollars (`0.1`, `$2.50`, `0`): a finite number, not negative.
///
/// # Errors
/// [`EvalError::InvalidValue`] naming the text, with examples.
pub fn parse_cost(text: &str) -> Result<f64, EvalError> {
    let trimmed = text.trim();
    let number = trimmed.strip_prefix('$').unwrap_or(trimmed);
    match number.parse::<f64>() {
        Ok(cost) if cost.is_finite() && cost >= 0.0 => Ok(cost),
        _ => Err(EvalError::invalid(
            "cost",
            text,
            "expected US dollars, 0 or more (examples: 0.5, $2.50)",
        )),
    }
}

/// The most CPUs `--cpus` takes.
pub const MAX_CPUS: u32 = 1024;
/// The most processes `--max-pids` takes (the kernel's `PID_MAX_LIMIT`).
pub const MAX_PIDS: u64 = 4_194_304;

/// Parses a CPU count (`2`, `1.5`, `0.25`; `0` disables) into thousandths of a CPU.
///
/// # Errors
/// [`EvalError::InvalidValue`] naming the text: not a number, negative, more than
/// [`MAX_CPUS`], or a positive share below a thousandth.
pub fn parse_cpus(text: &str) -> Result<u32, EvalError> {
    let invalid = || {
        EvalError::invalid(
            "cpus",
            text,
            "expected a number of CPUs from 0.001 to 1024, or 0 for no limit (examples: 2, 1.5)",
        )
    };
    let cpus: f64 = text.trim().parse().map_err(|_| invalid())?;
    if !cpus.is_finite() || !(0.0..=f64::from(MAX_CPUS)).contains(&cpus) {
        return Err(invalid());
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "checked to lie in 0..=1024 above"
    )]
    let millis = (cpus * 1000.0).round() as u32;
    if cpus > 0.0 && millis == 0 {
        return Err(invalid());
    }
    Ok(millis)
}

/// Parses a process count for `--max-pids` (`0` disables).
///
/// # Errors
/// [`EvalError::InvalidValue`] for what is not a count, or one above [`MAX_PIDS`].
pub fn parse_pids(text: &str) -> Result<u64, EvalError> {
    match text.trim().parse::<u64>() {
        Ok(pids) if pids <= MAX_PIDS => Ok(pids),
        _ => Err(EvalError::invalid(
            "pids",
            text,
            "expected a number of processes up to 4194304, or 0 for no limit",
        )),
    }
}

/// Parses a byte size: `1048576`, `512KiB`, `1MiB`, `1MB`, `2GB`, `0`.
///
/// Binary units (`KiB`, `MiB`, `GiB`, `TiB`) are powers of 1024, decimal units (`KB`, `MB`,
/// `GB`, `TB`) powers of 1000; `B` or no unit means bytes. Units are case-insensitive, a
/// space between number and unit is allowed, and fractions are allowed with a unit
/// (`1.5MiB`).
///
/// # Errors
/// [`EvalError::InvalidValue`] naming the text, with examples.
pub fn parse_size(text: &str) -> Result<u64, EvalError> {
    let err = |why: &str| {
        EvalError::invalid(
            "size",
            text,
            format!("{why} (examples: 1048576, 512KiB, 1MiB, 1MB)"),
        )
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    if number.is_empty() {
        return Err(err(if trimmed.starts_with('-') {
            "must not be negative"
        } else {
            "expected a number"
        }));
    }
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" | "k" => 1_000,
        "kib" => 1 << 10,
        "mb" | "m" => 1_000_000,
        "mib" => 1 << 20,
        "gb" | "g" => 1_000_000_000,
        "gib" => 1 << 30,
        "tb" | "t" => 1_000_000_000_000,
        "tib" => 1 << 40,
        _ => return Err(err("unknown unit")),
    };
    if let Some((whole, frac)) = number.split_once('.') {
        if multiplier == 1 || frac.is_empty() || frac.contains('.') {
            return Err(err("fractions need a unit larger than a byte"));
        }
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| err("bad number"))?
        };
        let frac_digits = frac.len().min(9);
        let frac_value: u64 = frac[..frac_digits].parse().map_err(|_| err("bad number"))?;
        let scale = 10u64.pow(u32::try_from(frac_digits).unwrap_or(9));
        let whole_bytes = whole
            .checked_mul(multiplier)
            .ok_or_else(|| err("too large"))?;
        let frac_bytes = u128::from(frac_value) * u128::from(multiplier) / u128::from(scale);
        return whole_bytes
            .checked_add(u64::try_from(frac_bytes).map_err(|_| err("too large"))?)
            .ok_or_else(|| err("too large"));
    }
    number
        .parse::<u64>()
        .map_err(|_| err("too large"))?
        .checked_mul(multiplier)
        .ok_or_else(|| err("too large"))
}

#[cfg(test)]
mod tests;
