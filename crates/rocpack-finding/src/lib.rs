//! The one finding model every rocpack domain reports through.
//!
//! - [`Severity`]: info, warning, error — the same three words in text, `--json` and HTML.
//! - Codes: each domain (`read`: reading files, archives, packages and trees, which `plan
//!   verify` reports too; `verify`; `cmake`, gathered into `verify`'s; `plan`; `devices`)
//!   declares its stable
//!   kebab-case codes with [`codes!`], each with the severity it has unless the finding says
//!   otherwise. docs/diagnostics.md lists every code of every domain; a test holds it to that.
//! - [`Finding`]: a finding about a file (what `verify` and the CMake interpreter report): a
//!   code of one domain, its severity, the file, a message, a hint and code-specific details.
//!   The readers of GPU containers report `Diagnostic`s instead, which locate a problem inside
//!   a file (container and byte offset); they share [`Severity`] and the [`codes!`] codes.
//! - [`Exit`]: how a command ended, and the one mapping from that to the process exit status.
#![forbid(unsafe_code)]

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is wrong.
    Info,
    /// Something unusual that does not stop the work.
    Warning,
    /// Something is broken, or part of the input could not be read.
    Error,
}

impl Severity {
    /// `info`, `warning` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A domain's finding code: a stable kebab-case name with a default severity. Declare one with
/// [`codes!`].
pub trait Code: Copy + Eq + fmt::Debug + 'static {
    /// The domain's name as docs/diagnostics.md heads its table (`read`, `verify`, …).
    const DOMAIN: &'static str;
    /// Every code of the domain, in documentation order.
    fn all() -> &'static [Self];
    /// The stable kebab-case name.
    fn as_str(self) -> &'static str;
    /// The severity a finding of this code has unless it says otherwise.
    fn severity(self) -> Severity;
    /// Parses a kebab-case name.
    fn parse(name: &str) -> Option<Self> {
        Self::all().iter().copied().find(|c| c.as_str() == name)
    }
}

/// Declares a domain's codes: an enum that implements [`Code`], `Display` and `Serialize` (as
/// its kebab-case name).
///
/// ```
/// rocpack_finding::codes! {
///     /// What the example can find.
///     pub enum ExampleCode in "example" {
///         /// A thing is missing.
///         Missing = ("missing", Error),
///         /// A thing is odd.
///         Odd = ("odd", Warning),
///     }
/// }
/// use rocpack_finding::{Code, Severity};
/// assert_eq!(ExampleCode::Odd.severity(), Severity::Warning);
/// assert_eq!(ExampleCode::parse("missing"), Some(ExampleCode::Missing));
/// assert_eq!(ExampleCode::all().len(), 2);
/// ```
#[macro_export]
macro_rules! codes {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident in $domain:literal {
            $( $(#[$vmeta:meta])* $variant:ident = ($code:literal, $sev:ident), )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every code of the domain, in documentation order.
            $vis const ALL: &'static [$name] = &[ $( $name::$variant, )+ ];

            /// Parses a kebab-case name.
            $vis fn parse(name: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|c| c.as_str() == name)
            }

            /// The stable kebab-case name.
            $vis fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $code, )+ }
            }
            /// The severity a finding of this code has unless it says otherwise.
            $vis fn severity(self) -> $crate::Severity {
                match self { $( $name::$variant => $crate::Severity::$sev, )+ }
            }
        }

        impl $crate::Code for $name {
            const DOMAIN: &'static str = $domain;
            fn all() -> &'static [Self] {
                $name::ALL
            }
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
            fn severity(self) -> $crate::Severity {
                $name::severity(self)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::__serde::Serialize for $name {
            fn serialize<S: $crate::__serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

#[doc(hidden)]
pub use serde as __serde;

/// One problem, located in the file where it lies: the library that needs a symbol, the config
/// that references a missing path. `C` is the domain's code (a [`codes!`] enum).
#[derive(Debug, Clone, PartialEq)]
pub struct Finding<C> {
    pub code: C,
    pub severity: Severity,
    /// The file where the problem lies, as found (inside the sysroot when one is given).
    pub file: PathBuf,
    /// One line, complete on its own.
    pub message: String,
    /// What to do about it, or where to look; may be empty.
    pub hint: String,
    /// Code-specific structured fields for `--json` (`symbol`, `version`, `library`,
    /// `searched`, `line`, …), documented per code.
    pub details: serde_json::Map<String, serde_json::Value>,
}

impl<C: Code> Finding<C> {
    /// A finding of `code`'s default severity.
    pub fn new(code: C, file: impl Into<PathBuf>, message: String) -> Self {
        Finding::with_severity(code, code.severity(), file, message)
    }

    /// A finding whose severity the check decides (`undefined-symbol` is a warning for a
    /// plugin, …; docs/diagnostics.md says when).
    pub fn with_severity(
        code: C,
        severity: Severity,
        file: impl Into<PathBuf>,
        message: String,
    ) -> Self {
        Finding {
            code,
            severity,
            file: file.into(),
            message,
            hint: String::new(),
            details: serde_json::Map::new(),
        }
    }

    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = hint.into();
        self
    }

    #[must_use]
    pub fn detail(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// The same finding with its code in another domain (a product's codes gathered into the
    /// command's: the CMake interpreter's into `verify`'s).
    pub fn into_domain<D: From<C>>(self) -> Finding<D> {
        Finding {
            code: D::from(self.code),
            severity: self.severity,
            file: self.file,
            message: self.message,
            hint: self.hint,
            details: self.details,
        }
    }
}

/// How a command ended. Every command maps its outcome to one of these, and this is the only
/// place that turns one into a process exit status (docs: README, "Exit status").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// Done, and nothing wrong found: 0.
    Ok,
    /// Done, but nothing matched the request, or what was asked for is missing: 1.
    NoMatch,
    /// An error: something could not be read completely, a finding of severity error, or the
    /// command failed (usage errors are 2 as well): 2.
    Error,
}

impl Exit {
    /// The process exit status.
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::NoMatch => 1,
            Exit::Error => 2,
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> std::process::ExitCode {
        std::process::ExitCode::from(e.code())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    codes! {
        enum T in "t" {
            A = ("a-code", Info),
            B = ("b-code", Error),
        }
    }

    #[test]
    fn codes_name_parse_and_serialize() {
        assert_eq!(T::all(), &[T::A, T::B]);
        assert_eq!(T::parse("b-code"), Some(T::B));
        assert_eq!(T::parse("c-code"), None);
        assert_eq!(T::A.severity(), Severity::Info);
        assert_eq!(T::B.to_string(), "b-code");
        assert_eq!(T::DOMAIN, "t");
        assert_eq!(serde_json::to_string(&T::B).unwrap(), "\"b-code\"");
        assert_eq!(
            serde_json::to_string(&Severity::Warning).unwrap(),
            "\"warning\""
        );
    }

    #[test]
    fn exit_codes_are_ordered_by_badness() {
        assert!(Exit::Ok < Exit::NoMatch && Exit::NoMatch < Exit::Error);
        assert_eq!(
            [Exit::Ok, Exit::NoMatch, Exit::Error].map(Exit::code),
            [0, 1, 2]
        );
        assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Error);
    }
}
