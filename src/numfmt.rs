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

#[cfg(test)]
mod tests {
    use super::*;

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
}
