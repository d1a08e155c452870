//! Bearer tokens: from a file (`--token-file`, one `TOKEN [NAMESPACE]` a line) and from `COSID_SERVE_TOKEN`.
//!
//! With no token configured every request is served (the default listen address is 127.0.0.1). With any, every
//! request but `/healthz` and `/readyz` needs `Authorization: Bearer TOKEN`; a token given with a namespace opens
//! that namespace only, one without opens everything.

use std::path::Path;

/// The configured tokens.
#[derive(Default)]
pub struct Tokens {
    entries: Vec<Entry>,
}

struct Entry {
    token: Vec<u8>,
    scope: Option<String>,
    /// How logs and metrics name the token (never the token itself): `file:LINE` or `env`.
    name: String,
}

/// Who a request comes from, as far as its token tells (before any namespace is checked).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identity {
    /// No token is configured: every client is anonymous (limits then apply per address).
    Open,
    /// A configured token, by its index.
    Token(usize),
    /// Tokens are configured and the request has none that is known.
    Unknown,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tokens({} configured)", self.entries.len())
    }
}

/// What a request may do.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// No token, or one that is not configured: 401.
    Unauthenticated,
    /// A token for another namespace: 403.
    Forbidden,
}

impl Tokens {
    /// Reads `file` (if any) and `env` (a token for every namespace, if set and not empty).
    pub fn load(file: Option<&Path>, env: Option<String>) -> Result<Self, String> {
        let mut entries = Vec::new();
        if let Some(file) = file {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read the token file {}: {e}", file.display()))?;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (token, namespace) = match line.split_once(char::is_whitespace) {
                    Some((t, ns)) => (t, Some(ns.trim().to_owned())),
                    None => (line, None),
                };
                if token.len() < 16 {
                    return Err(format!(
                        "{} line {}: a token must be at least 16 characters long",
                        file.display(),
                        n + 1
                    ));
                }
                entries.push(Entry {
                    token: token.as_bytes().to_vec(),
                    scope: namespace,
                    name: format!("file:{}", n + 1),
                });
            }
        }
        if let Some(token) = env.filter(|t| !t.is_empty()) {
            entries.push(Entry {
                token: token.into_bytes(),
                scope: None,
                name: "env".into(),
            });
        }
        Ok(Self { entries })
    }

    /// How many tokens are configured.
    pub fn count(&self) -> usize {
        self.entries.len()
    }

    /// Whether any token is configured.
    pub fn enabled(&self) -> bool {
        !self.entries.is_empty()
    }

    /// The token of an `Authorization` header value: the `Bearer` scheme is case-insensitive (RFC 9110, 11.1).
    fn bearer(header: Option<&[u8]>) -> Option<&[u8]> {
        let h = header?;
        let (scheme, rest) = h.split_at(h.iter().position(|&b| b == b' ')?);
        scheme
            .eq_ignore_ascii_case(b"bearer")
            .then(|| rest.trim_ascii())
    }

    /// Who the `Authorization` header value names.
    pub fn identify(&self, header: Option<&[u8]>) -> Identity {
        if !self.enabled() {
            return Identity::Open;
        }
        let Some(given) = Self::bearer(header) else {
            return Identity::Unknown;
        };
        // Every entry is compared, in constant time each, so the answer's timing tells nothing of the tokens.
        let mut found = None;
        for (i, e) in self.entries.iter().enumerate() {
            if constant_time_eq(&e.token, given) && found.is_none() {
                found = Some(i);
            }
        }
        found.map_or(Identity::Unknown, Identity::Token)
    }

    /// How logs name `identity`: the token's name, never the token.
    pub fn name(&self, identity: &Identity) -> &str {
        match identity {
            Identity::Open => "anonymous",
            Identity::Unknown => "unauthenticated",
            Identity::Token(i) => self.entries.get(*i).map_or("?", |e| e.name.as_str()),
        }
    }

    /// Whether the `Authorization` header value opens `namespace` (`None`: a request about no one namespace,
    /// which needs a token for every namespace).
    pub fn check(&self, header: Option<&[u8]>, namespace: Option<&str>) -> Verdict {
        if !self.enabled() {
            return Verdict::Allowed;
        }
        let Some(given) = Self::bearer(header) else {
            return Verdict::Unauthenticated;
        };
        let mut known = false;
        let mut allowed = false;
        // Every entry is compared, in constant time each, so the answer's timing tells nothing of the tokens.
        for e in &self.entries {
            if constant_time_eq(&e.token, given) {
                known = true;
                allowed |= match (&e.scope, namespace) {
                    (None, _) => true,
                    (Some(s), Some(ns)) => s == ns,
                    (Some(_), None) => false,
                };
            }
        }
        match (known, allowed) {
            (_, true) => Verdict::Allowed,
            (true, false) => Verdict::Forbidden,
            (false, _) => Verdict::Unauthenticated,
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_open_their_namespace_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens");
        std::fs::write(
            &file,
            "# comment\nall-namespaces-token-1\norders-only-token-22 orders\n",
        )
        .unwrap();
        let t = Tokens::load(Some(&file), None).unwrap();
        let h = |s: &'static str| Some(s.as_bytes());
        assert_eq!(
            t.check(h("Bearer all-namespaces-token-1"), Some("x")),
            Verdict::Allowed
        );
        assert_eq!(
            t.check(h("Bearer all-namespaces-token-1"), None),
            Verdict::Allowed
        );
        assert_eq!(
            t.check(h("Bearer orders-only-token-22"), Some("orders")),
            Verdict::Allowed
        );
        assert_eq!(
            t.check(h("Bearer orders-only-token-22"), Some("users")),
            Verdict::Forbidden
        );
        assert_eq!(
            t.check(h("Bearer orders-only-token-22"), None),
            Verdict::Forbidden
        );
        assert_eq!(
            t.check(h("Bearer nope-nope-nope-nope"), Some("x")),
            Verdict::Unauthenticated
        );
        assert_eq!(t.check(None, Some("x")), Verdict::Unauthenticated);
        // The scheme is case-insensitive.
        assert_eq!(
            t.check(h("bearer all-namespaces-token-1"), Some("x")),
            Verdict::Allowed
        );
        assert_eq!(
            t.check(h("BEARER  orders-only-token-22"), Some("orders")),
            Verdict::Allowed
        );
        assert_eq!(
            t.check(h("Basic all-namespaces-token-1"), Some("x")),
            Verdict::Unauthenticated
        );
        assert_eq!(
            t.identify(h("bearer orders-only-token-22")),
            Identity::Token(1)
        );
        assert_eq!(t.name(&Identity::Token(1)), "file:3");
        assert_eq!(t.identify(h("Bearer nope")), Identity::Unknown);
        assert!(Tokens::load(None, None).unwrap().check(None, None) == Verdict::Allowed);
        std::fs::write(&file, "short\n").unwrap();
        assert!(Tokens::load(Some(&file), None).is_err());
    }
}
