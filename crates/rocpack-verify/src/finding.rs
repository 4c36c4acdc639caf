//! The one report type every check returns: a finding with a stable code (the model is
//! `rocpack_finding`'s; this is the `verify` domain's).

use std::path::PathBuf;

pub use rocpack_finding::Severity;

rocpack_finding::codes! {
    /// What kind of problem a finding is, with the severity it has unless the check says
    /// otherwise (docs/diagnostics.md, "verify"). The kebab-case names are stable: they appear in
    /// `--json` and in `--allow CODE`.
    pub enum Code in "verify" {
        /// A DT_NEEDED library was not found on the search path the loader would use.
        UnresolvedLibrary = ("unresolved-library", Error),
        /// A non-weak undefined dynamic symbol has no definition in the load closure.
        UndefinedSymbol = ("undefined-symbol", Error),
        /// A required symbol version (verneed) is not defined by the library that should
        /// provide it.
        MissingSymbolVersion = ("missing-symbol-version", Error),
        /// The same strong C++ symbols are defined by two libraries of one closure.
        DuplicateDefinition = ("duplicate-definition", Error),
        /// A CMake config includes or references a file that does not exist.
        CmakeMissingFile = ("cmake-missing-file", Error),
        /// A CMake config references a path outside the prefix (often a build-machine path).
        CmakePathOutsidePrefix = ("cmake-path-outside-prefix", Error),
        /// Part of a CMake config could not be evaluated; what it references was not checked.
        CmakeNotEvaluated = ("cmake-not-evaluated", Info),
        /// AMDGPU device-library bitcode is missing for a target the prefix carries code for.
        MissingDeviceLib = ("missing-device-lib", Error),
        /// clang's resource directory is not where the installed clang looks for it.
        ClangResourceDir = ("clang-resource-dir", Error),
        /// hip and hip-lang CMake configs disagree, or one is missing.
        HipConfigMismatch = ("hip-config-mismatch", Error),
        /// A file could not be read or parsed.
        UnreadableFile = ("unreadable-file", Error),
        /// A FIFO, socket or device where a file was expected: skipped without opening it.
        NotRegularFile = ("not-regular-file", Error),
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
    /// A finding of `code`'s default severity.
    pub fn new(code: Code, file: impl Into<PathBuf>, message: String) -> Self {
        Finding::with_severity(code, code.severity(), file, message)
    }

    /// A finding whose severity the check decides (`undefined-symbol` is a warning for a
    /// plugin, …; docs/diagnostics.md says when).
    pub fn with_severity(
        code: Code,
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
}
