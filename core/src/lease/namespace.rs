//! Namespace names: chosen by people, validated once, and encoded so that two names never share a store key.

use std::fmt;

/// The longest namespace name, in bytes of UTF-8.
pub const MAX_NAMESPACE_LEN: usize = 128;

/// Why a namespace name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NamespaceError {
    /// The name is empty.
    #[error("namespace name is empty; expected 1 to {MAX_NAMESPACE_LEN} bytes")]
    Empty,
    /// The name is too long.
    #[error("namespace name is {len} bytes long; expected at most {MAX_NAMESPACE_LEN}")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The name holds a control character or a character that is not printable.
    #[error("namespace name {name:?} has the control character {found:?} at byte {position}; expected printable characters")]
    InvalidCharacter {
        /// The name as given.
        name: String,
        /// The character refused.
        found: char,
        /// Its byte offset.
        position: usize,
    },
}

/// A validated namespace name.
///
/// Any printable Unicode text of 1 to 128 bytes is accepted, including characters that are special to some store
/// (`{`, `}`, `:`, `/`, `.`, `%`, space, quotes). Stores never use the name as it is in a key: they use
/// [`Namespace::encoded`], an injective encoding made only of `[A-Za-z0-9_-]` and `%XX`.
///
/// ```
/// use cosid::lease::Namespace;
/// let a = Namespace::new("orders:eu").unwrap();
/// let b = Namespace::new("orders%3Aeu").unwrap();
/// assert_ne!(a.encoded(), b.encoded());
/// assert!(Namespace::new("").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Namespace {
    name: String,
    encoded: String,
}

impl Namespace {
    /// Validates `name`.
    pub fn new(name: impl Into<String>) -> Result<Self, NamespaceError> {
        let name = name.into();
        if name.is_empty() {
            return Err(NamespaceError::Empty);
        }
        if name.len() > MAX_NAMESPACE_LEN {
            return Err(NamespaceError::TooLong { len: name.len() });
        }
        if let Some((position, found)) = name
            .char_indices()
            .find(|(_, c)| c.is_control() || is_invisible(*c))
        {
            return Err(NamespaceError::InvalidCharacter {
                name,
                found,
                position,
            });
        }
        let encoded = encode(&name);
        Ok(Self { name, encoded })
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// The name encoded for use inside a store key: bytes outside `[A-Za-z0-9_-]` become `%XX` (uppercase hex).
    /// Two different names always give two different encodings.
    pub fn encoded(&self) -> &str {
        &self.encoded
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.name, f)
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl std::str::FromStr for Namespace {
    type Err = NamespaceError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

/// Zero-width and bidirectional formatting characters: they make two names look alike.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}')
}

fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_characters_never_collide() {
        let names = [
            "a{b}", "a}b{", "a:b", "a/b", "a.b", "a%b", "a b", "a'b", "a\"b", "aéb", "a%3Ab",
            "a_b", "a-b",
        ];
        let mut seen = std::collections::HashSet::new();
        for n in names {
            let ns = Namespace::new(n).unwrap();
            assert!(
                ns.encoded()
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-%".contains(&b)),
                "{ns:?}"
            );
            assert!(seen.insert(ns.encoded().to_owned()), "{n} collides");
        }
    }

    #[test]
    fn refuses_bad_names() {
        assert_eq!(Namespace::new(""), Err(NamespaceError::Empty));
        assert!(matches!(
            Namespace::new("x".repeat(129)),
            Err(NamespaceError::TooLong { len: 129 })
        ));
        assert!(matches!(
            Namespace::new("a\nb"),
            Err(NamespaceError::InvalidCharacter { found: '\n', .. })
        ));
        assert!(Namespace::new("a\u{200B}b").is_err());
        assert!(Namespace::new("x".repeat(128)).is_ok());
    }
}
