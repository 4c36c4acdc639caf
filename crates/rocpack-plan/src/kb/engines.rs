//! `engines/<tool>.toml`: what a build tool's own package collection holds (Spack's recipes,
//! Gentoo's ebuilds, nixpkgs' expressions, TheRock's CMake), extracted mechanically from its
//! sources at a recorded commit by `scripts/engines/<tool>/extract.*`.
//!
//! The planner reads `[engine]` and `[components]`: which ROCm release lines the tool can build a
//! component at, so that a plan for a release the tool lacks says so and names the nearest ones.
//! `[facts]` is the tool's own detail (variant values, REQUIRED_USE, derivation arguments, cache
//! variables) that the engine tests (`tests/engine_<tool>.rs`) hold the emitted output to.

use std::collections::BTreeMap;

use serde::Deserialize;

/// One `engines/<tool>.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineFacts {
    pub engine: EngineInfo,
    /// Component (as in `components.toml`) → the tool's package and the release lines it has.
    #[serde(default)]
    pub components: BTreeMap<String, EngineComponent>,
    /// The tool's own facts, read by its engine test.
    #[serde(default)]
    pub facts: Option<toml::Value>,
}

/// `[engine]`: where the facts were read.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineInfo {
    /// `spack`, `gentoo`, `nix` or `therock`.
    pub tool: String,
    pub repos: Vec<EngineRepo>,
    /// The script that wrote the file.
    pub script: String,
    pub note: Option<String>,
}

/// A repository at the commit the facts were read at.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineRepo {
    pub repo: String,
    pub commit: String,
    pub date: Option<String>,
}

/// `[components.<Name>]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineComponent {
    /// The tool's name for it (Spack package, Gentoo atom, nixpkgs attribute, TheRock project).
    pub package: String,
    /// ROCm release lines (`"6.4"`) the tool can build it at, ascending.
    pub releases: Vec<String>,
    pub note: Option<String>,
}

/// `"6.4"` → `(6, 4)`.
pub fn release_key(r: &str) -> Option<(u32, u32)> {
    let (a, b) = r.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

impl EngineComponent {
    /// Whether the tool has the component at `release`.
    pub fn has(&self, release: &str) -> bool {
        self.releases.iter().any(|r| r == release)
    }

    /// The release lines nearest to `release` that the tool has: the newest one below it and
    /// the oldest one above it, whichever exist.
    pub fn nearest(&self, release: &str) -> Vec<&str> {
        let Some(want) = release_key(release) else {
            return Vec::new();
        };
        let keyed = || {
            self.releases
                .iter()
                .filter_map(|r| Some((release_key(r)?, r.as_str())))
        };
        let below = keyed().filter(|(k, _)| *k < want).max_by_key(|(k, _)| *k);
        let above = keyed().filter(|(k, _)| *k > want).min_by_key(|(k, _)| *k);
        below.into_iter().chain(above).map(|(_, r)| r).collect()
    }
}

impl EngineFacts {
    /// Checks what the planner relies on: a known tool, ascending `X.Y` release lines.
    ///
    /// # Errors
    /// The rule broken, naming the table.
    pub fn check(&self, file_tool: &str) -> Result<(), String> {
        if self.engine.tool != file_tool {
            return Err(format!(
                "[engine].tool is {:?}, the file is for {file_tool}",
                self.engine.tool
            ));
        }
        if self.engine.repos.is_empty() {
            return Err("[engine].repos names no repository".to_owned());
        }
        for r in &self.engine.repos {
            if r.commit.len() != 40 || !r.commit.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!(
                    "[engine].repos {}: commit is not 40 hex digits",
                    r.repo
                ));
            }
        }
        for (name, c) in &self.components {
            let keys: Option<Vec<(u32, u32)>> = c.releases.iter().map(|r| release_key(r)).collect();
            let Some(keys) = keys else {
                return Err(format!("[components.{name}]: a release is not X.Y"));
            };
            if !keys.windows(2).all(|w| w[0] < w[1]) {
                return Err(format!("[components.{name}]: releases are not ascending"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn component(releases: &[&str]) -> EngineComponent {
        EngineComponent {
            package: "p".into(),
            releases: releases.iter().map(|s| (*s).to_owned()).collect(),
            note: None,
        }
    }

    #[test]
    fn nearest_is_the_neighbour_on_each_side() {
        let c = component(&["5.7", "6.0", "6.1", "6.3", "6.4", "7.1"]);
        assert!(!c.has("6.2"));
        assert_eq!(c.nearest("6.2"), ["6.1", "6.3"]);
        assert_eq!(c.nearest("7.0"), ["6.4", "7.1"]);
        assert_eq!(c.nearest("7.2"), ["7.1"]);
        assert_eq!(c.nearest("5.0"), ["5.7"]);
        assert!(component(&[]).nearest("6.2").is_empty());
    }

    #[test]
    fn check_rejects_unordered_releases_and_bad_commits() {
        let text = r#"
            [engine]
            tool = "gentoo"
            repos = [{ repo = "gentoo/gentoo", commit = "0123456789abcdef0123456789abcdef01234567" }]
            script = "scripts/engines/gentoo/extract.py"
            [components.MIOpen]
            package = "sci-libs/miopen"
            releases = ["6.3", "6.1"]
        "#;
        let f: EngineFacts = toml::from_str(text).unwrap();
        assert!(f.check("gentoo").unwrap_err().contains("ascending"));
        assert!(f.check("spack").unwrap_err().contains("tool"));
        let short = text.replace("0123456789abcdef0123456789abcdef01234567", "0123");
        let f: EngineFacts = toml::from_str(&short).unwrap();
        assert!(f.check("gentoo").unwrap_err().contains("40 hex"));
    }
}
