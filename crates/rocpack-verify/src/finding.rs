//! The one report type every check returns: a finding with a stable code (the model is
//! `rocpack_finding`'s; this is the `verify` domain's).

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

impl From<rocpack_cmake::CmakeCode> for Code {
    fn from(c: rocpack_cmake::CmakeCode) -> Code {
        use rocpack_cmake::CmakeCode as C;
        match c {
            C::CmakeMissingFile => Code::CmakeMissingFile,
            C::CmakePathOutsidePrefix => Code::CmakePathOutsidePrefix,
            C::CmakeNotEvaluated => Code::CmakeNotEvaluated,
            C::UnreadableFile => Code::UnreadableFile,
        }
    }
}

/// A `verify` finding.
pub type Finding = rocpack_finding::Finding<Code>;
