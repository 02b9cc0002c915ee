//! Numbers for people: thousands separated (`1,093,584`), money with its
//! currency. Every page, report and CLI line formats through here so one
//! number reads the same everywhere.

/// `1093584` → `1,093,584`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A count and its noun, thousands separated: `1, "cell"` → `1 cell`,
/// `1200, "cell"` → `1,200 cells`, `2, "process"` → `2 processes` (nouns
/// whose plural adds -s, or -es after s, x, ch, sh).
pub fn count(n: u64, noun: &str) -> String {
    let plural = if n == 1 {
        ""
    } else if ["s", "x", "ch", "sh"].iter().any(|e| noun.ends_with(e)) {
        "es"
    } else {
        "s"
    };
    format!("{} {noun}{plural}", thousands(n))
}

/// A size as people read it: `512 B`, `12.3 KiB`, `4.0 MiB`, `1.2 GiB`
/// (binary units, one decimal).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut x = n as f64 / 1024.0;
    let mut unit = 0;
    while x >= 1024.0 && unit + 1 < UNITS.len() {
        x /= 1024.0;
        unit += 1;
    }
    format!("{} {}", decimal(x, 1), UNITS[unit])
}

/// An amount with two decimals, thousands separated, and its currency:
/// `1234.5, "USD"` → `1,234.50 USD`.
pub fn money(amount: f64, currency: &str) -> String {
    if !amount.is_finite() {
        return format!("– {currency}");
    }
    let cents = (amount.abs() * 100.0).round() as u64;
    let sign = if amount < 0.0 && cents > 0 { "-" } else { "" };
    format!("{sign}{}.{:02} {currency}", thousands(cents / 100), cents % 100)
}

/// A number with `places` decimals, thousands separated: `1234.56, 1` →
/// `1,234.6` (`–` when not finite).
pub fn decimal(x: f64, places: u32) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let scale = 10u64.pow(places);
    let scaled = (x.abs() * scale as f64).round() as u64;
    let sign = if x < 0.0 && scaled > 0 { "-" } else { "" };
    let whole = thousands(scaled / scale);
    match places {
        0 => format!("{sign}{whole}"),
        p => format!("{sign}{whole}.{:0width$}", scaled % scale, width = p as usize),
    }
}

/// A fraction as signed whole percentage points, with a true minus sign:
/// `+25`, `−8`, `0`.
pub fn signed_pp(x: f64) -> String {
    let v = (x * 100.0).round();
    if v == 0.0 {
        "0".to_owned()
    } else if v < 0.0 {
        format!("−{}", -v)
    } else {
        format!("+{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(12_595), "12.3 KiB");
        assert_eq!(bytes(4 << 20), "4.0 MiB");
        assert_eq!(bytes(1_288_490_189), "1.2 GiB");
        assert_eq!(count(1, "cell"), "1 cell");
        assert_eq!(count(1200, "cell"), "1,200 cells");
        assert_eq!(count(2, "process"), "2 processes");
    }

    #[test]
    fn money_has_two_decimals_separators_and_its_currency() {
        assert_eq!(money(1234.5, "USD"), "1,234.50 USD");
        assert_eq!(money(0.004, "EUR"), "0.00 EUR");
        assert_eq!(money(-3.2, "USD"), "-3.20 USD");
    }

    #[test]
    fn thousands_are_separated() {
        for (n, want) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (1_093_584, "1,093,584"),
            (u64::MAX, "18,446,744,073,709,551,615"),
        ] {
            assert_eq!(thousands(n), want);
        }
    }

    #[test]
    fn decimals_round_and_separate_thousands() {
        assert_eq!(super::decimal(1234.56, 1), "1,234.6");
        assert_eq!(super::decimal(0.04, 1), "0.0");
        assert_eq!(super::decimal(-2.5, 0), "-3");
        assert_eq!(super::decimal(12.0, 2), "12.00");
        assert_eq!(super::decimal(f64::NAN, 1), "–");
    }
}
