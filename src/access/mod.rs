//! Who may talk to the console, and what each may do.
//!
//! A console always asks a token (unless started with `--no-token` on
//! purpose). The **console token** is its user's own: made once, kept in the
//! data folder readable by that user alone, printed in the URL `serve` gives.
//! Beside it, **named tokens** made with `runboard token add NAME --view` or
//! `--operate`: a *viewer* reads every page, stream and GET and is refused
//! every request that changes anything; an *operator* may do everything the
//! console's user may. Named tokens are kept only as their SHA-256 (a token is
//! 256 random bits, so a plain hash cannot be searched back), so the token
//! book can be read without handing out the tokens; revoking one takes effect
//! at the next request.
//!
//! This module holds the book, its rules and the refusal's words; making,
//! hashing and keeping tokens is the server's (`server::access::tokens`).

pub mod audit;

use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads every page, stream and GET; refused every change.
    View,
    /// Everything: reads, controls, drafts, tags, research, upkeep, publish, auto.
    Operate,
}

impl Role {
    pub const fn word(self) -> &'static str {
        match self {
            Self::View => "view",
            Self::Operate => "operate",
        }
    }

    /// May a request of this role be served: `changes` when it is anything
    /// but a read (GET, HEAD, OPTIONS). (Asked of every request: the words
    /// of a refusal are [`Role::refusal`]'s, made only then.)
    pub fn may(self, changes: bool) -> bool {
        !(self == Self::View && changes)
    }

    /// The words of a refusal [`Role::may`] gave: `who` (the token's name)
    /// asked `what` (`POST /api/control/stop`).
    pub fn refusal(who: &str, what: &str) -> String {
        format!(
            "refused: {who} is a viewer's token — it reads every page but may not change anything ({what}); \
             ask an operator, or use a token made with `runboard token add NAME --operate`"
        )
    }
}

crate::display_as_word!(Role);

/// One named token as the book keeps it: never the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenEntry {
    pub name: String,
    pub role: Role,
    /// SHA-256 of the token, lower-case hex.
    pub sha256: String,
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub created: Timestamp,
}

/// The named tokens of a data folder (`tokens.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenBook {
    pub tokens: Vec<TokenEntry>,
}

/// The name the console token goes by in the audit log and on the page.
pub const CONSOLE_TOKEN_NAME: &str = "console";

impl TokenBook {
    /// The entry whose hash is `sha256`, if any.
    pub fn find(&self, sha256: &str) -> Option<&TokenEntry> {
        self.tokens.iter().find(|t| t.sha256 == sha256)
    }

    /// Adds `entry`; refused (in words) when its name is unusable or taken.
    pub fn add(&mut self, entry: TokenEntry) -> Result<(), String> {
        if let Some(problem) = name_problem(&entry.name) {
            return Err(format!("token name {:?}: {problem}", entry.name));
        }
        if self.tokens.iter().any(|t| t.name == entry.name) {
            return Err(format!(
                "a token named {:?} exists already (revoke it first: runboard token revoke {})",
                entry.name, entry.name
            ));
        }
        self.tokens.push(entry);
        Ok(())
    }

    /// Removes the token named `name`; refused when there is none.
    pub fn revoke(&mut self, name: &str) -> Result<TokenEntry, String> {
        let Some(at) = self.tokens.iter().position(|t| t.name == name) else {
            let known: Vec<&str> = self.tokens.iter().map(|t| t.name.as_str()).collect();
            return Err(if known.is_empty() {
                format!("no token is named {name:?}: there are no named tokens")
            } else {
                format!("no token is named {name:?} (there are: {})", known.join(", "))
            });
        };
        Ok(self.tokens.remove(at))
    }
}

/// Why `name` cannot name a token, if it cannot: it appears in the audit
/// log and on the command line, so letters, digits, `.`, `_`, `-`, 1–64 of
/// them, and not the console token's own name.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() || name.len() > 64 {
        Some("a name is 1 to 64 characters")
    } else if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        Some("a name holds only letters, digits, '.', '_' and '-'")
    } else if name == CONSOLE_TOKEN_NAME {
        Some("\"console\" is the console token's own name")
    } else {
        None
    }
}

/// Why `token` cannot be used, if it cannot: empty, or with whitespace around it
/// (a copy-paste accident that would lock everyone out, since browsers and
/// clients send the token as typed).
pub fn token_problem(token: &str) -> Option<&'static str> {
    if token.trim().is_empty() {
        Some("the token is empty")
    } else if token.trim() != token {
        Some("the token has spaces or line breaks around it")
    } else if !token.bytes().all(|b| b.is_ascii_graphic()) {
        Some("the token has spaces inside or characters other than printable ASCII (it travels in a header and a cookie)")
    } else if token.contains(';') || token.contains(',') {
        Some("the token contains ';' or ',', which a cookie cannot carry")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unusable_tokens_are_named() {
        assert_eq!(token_problem(""), Some("the token is empty"));
        assert_eq!(token_problem("   "), Some("the token is empty"));
        assert_eq!(token_problem(" s3cret"), Some("the token has spaces or line breaks around it"));
        assert_eq!(token_problem("s3cret\n"), Some("the token has spaces or line breaks around it"));
        assert!(token_problem("a;b").is_some());
        assert_eq!(token_problem("s3cret-Token_1"), None);
    }

    fn entry(name: &str, role: Role) -> TokenEntry {
        TokenEntry { name: name.into(), role, sha256: format!("{name}-hash"), created: Timestamp::from_millis(0) }
    }

    #[test]
    fn viewers_read_and_are_refused_changes_in_words() {
        assert!(Role::View.may(false) && Role::Operate.may(true) && Role::Operate.may(false));
        assert!(!Role::View.may(true));
        let no = Role::refusal("ana", "stop");
        assert!(no.contains("ana is a viewer's token") && no.contains("(stop)") && no.contains("--operate"), "{no}");
    }

    #[test]
    fn the_book_adds_finds_and_revokes_by_name() {
        let mut book = TokenBook::default();
        book.add(entry("ana", Role::View)).unwrap();
        book.add(entry("bo", Role::Operate)).unwrap();
        assert!(book.add(entry("ana", Role::Operate)).unwrap_err().contains("exists already"));
        assert!(book.add(entry("console", Role::View)).unwrap_err().contains("console token's own name"));
        assert!(book.add(entry("a b", Role::View)).unwrap_err().contains("only letters"));
        assert_eq!(book.find("bo-hash").map(|t| t.role), Some(Role::Operate));
        assert_eq!(book.revoke("ana").unwrap().name, "ana");
        assert!(book.find("ana-hash").is_none());
        assert!(book.revoke("ana").unwrap_err().contains("there are: bo"));
        let wire = serde_json::to_string(&book).unwrap();
        assert!(wire.contains("\"role\":\"operate\"") && !wire.contains("token\":"), "{wire}");
    }
}
