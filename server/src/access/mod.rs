//! Who may talk to the console and what they did: the guard every request
//! passes (Host, Origin, token, role), the tokens on disk, the audit log.

pub mod audit;
pub mod auth;
pub mod tokens;
