//! The one report type every check returns: a finding with a stable code.

use std::path::PathBuf;

use serde::Serialize;

/// What kind of problem a finding is. The kebab-case names are stable: they appear in `--json`,
/// in `--allow CODE`, and in docs/verify.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    /// A DT_NEEDED library was not found on the search path the loader would use.
    UnresolvedLibrary,
    /// A non-weak undefined dynamic symbol has no definition in the load closure.
    UndefinedSymbol,
    /// A required symbol version (verneed) is not defined by the library that should provide it.
    MissingSymbolVersion,
    /// The same strong C++ symbols are defined by two libraries of one closure.
    DuplicateDefinition,
    /// A CMake config includes or references a file that does not exist.
    CmakeMissingFile,
    /// A CMake config references a path outside the prefix (often a build-machine path).
    CmakePathOutsidePrefix,
    /// Part of a CMake config could not be evaluated; what it references was not checked.
    CmakeNotEvaluated,
    /// AMDGPU device-library bitcode is missing for a target the prefix carries code for.
    MissingDeviceLib,
    /// clang's resource directory is not where the installed clang looks for it.
    ClangResourceDir,
    /// hip and hip-lang CMake configs disagree, or one is missing.
    HipConfigMismatch,
    /// A file could not be read or parsed.
    UnreadableFile,
    /// A FIFO, socket or device where a file was expected: skipped without opening it.
    NotRegularFile,
}

impl Code {
    /// Every code, in documentation order.
    pub const ALL: &'static [Code] = &[
        Code::UnresolvedLibrary,
        Code::UndefinedSymbol,
        Code::MissingSymbolVersion,
        Code::DuplicateDefinition,
        Code::CmakeMissingFile,
        Code::CmakePathOutsidePrefix,
        Code::CmakeNotEvaluated,
        Code::MissingDeviceLib,
        Code::ClangResourceDir,
        Code::HipConfigMismatch,
        Code::UnreadableFile,
        Code::NotRegularFile,
    ];

    /// The stable kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::UnresolvedLibrary => "unresolved-library",
            Code::UndefinedSymbol => "undefined-symbol",
            Code::MissingSymbolVersion => "missing-symbol-version",
            Code::DuplicateDefinition => "duplicate-definition",
            Code::CmakeMissingFile => "cmake-missing-file",
            Code::CmakePathOutsidePrefix => "cmake-path-outside-prefix",
            Code::CmakeNotEvaluated => "cmake-not-evaluated",
            Code::MissingDeviceLib => "missing-device-lib",
            Code::ClangResourceDir => "clang-resource-dir",
            Code::HipConfigMismatch => "hip-config-mismatch",
            Code::UnreadableFile => "unreadable-file",
            Code::NotRegularFile => "not-regular-file",
        }
    }

    /// Parses a kebab-case name.
    pub fn parse(s: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How bad a finding is. Any `Error` makes `rocpack verify` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One problem, located in the file where it lies: the library that needs a symbol, the config
/// that references a missing path.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub code: Code,
    pub severity: Severity,
    /// The file where the problem lies, as found (inside the sysroot when one is given).
    pub file: PathBuf,
    /// One line, complete on its own.
    pub message: String,
    /// What to do about it, or where to look; may be empty.
    pub hint: String,
    /// Code-specific structured fields for `--json` (`symbol`, `version`, `library`,
    /// `searched`, `line`, …), documented per code in docs/verify.md.
    pub details: serde_json::Map<String, serde_json::Value>,
}

impl Finding {
    pub fn new(code: Code, severity: Severity, file: impl Into<PathBuf>, message: String) -> Self {
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
}
