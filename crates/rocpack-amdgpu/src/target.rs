//! Target IDs: `<processor>(:<feature>(+|-))*`, canonical form with features sorted by name.

use std::fmt;

/// The setting of one target feature (xnack or sramecc) in a target ID or code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Feature {
    /// Not specified: the code runs with the feature on or off (or the processor lacks it).
    #[default]
    Any,
    /// Pinned on (`+`).
    On,
    /// Pinned off (`-`).
    Off,
}

impl Feature {
    fn suffix(self) -> Option<char> {
        match self {
            Feature::Any => None,
            Feature::On => Some('+'),
            Feature::Off => Some('-'),
        }
    }
}

/// A target ID such as `gfx90a:sramecc-:xnack+`.
///
/// The processor is kept as written: parsing does not require it to be known, so IDs from
/// newer compilers are still read. Validation against the GPU catalogue is a separate step.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetId {
    /// Processor name, e.g. `gfx90a` or `gfx10-3-generic`.
    pub processor: String,
    /// The sramecc setting.
    pub sramecc: Feature,
    /// The xnack setting.
    pub xnack: Feature,
}

/// Why a string is not a target ID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetIdError {
    /// The processor part is empty.
    #[error("target ID {0:?} has no processor")]
    EmptyProcessor(String),
    /// A feature has no `+` or `-`.
    #[error("feature {feature:?} in target ID {id:?} must end in + or -")]
    MissingSign { id: String, feature: String },
    /// A feature other than xnack and sramecc.
    #[error("unknown feature {feature:?} in target ID {id:?} (known: sramecc, xnack)")]
    UnknownFeature { id: String, feature: String },
    /// The same feature twice.
    #[error("feature {feature:?} appears twice in target ID {id:?}")]
    DuplicateFeature { id: String, feature: String },
    /// A feature the processor does not have (clang rejects such target IDs).
    #[error("{processor} has no {feature} feature, so {id:?} is not a valid target ID")]
    UnsupportedFeature {
        id: String,
        processor: String,
        feature: &'static str,
    },
    /// A processor missing from rocpack's table.
    #[error("unknown processor {processor:?} in target ID {id:?}")]
    UnknownProcessor { id: String, processor: String },
}

impl TargetId {
    /// A target ID with both features unspecified.
    pub fn new(processor: impl Into<String>) -> Self {
        TargetId {
            processor: processor.into(),
            sramecc: Feature::Any,
            xnack: Feature::Any,
        }
    }

    /// Parses `gfx90a:xnack+:sramecc-` in any feature order.
    ///
    /// # Errors
    /// [`TargetIdError`] for an empty processor, a feature without sign, an unknown or repeated
    /// feature.
    pub fn parse(s: &str) -> Result<Self, TargetIdError> {
        let mut parts = s.split(':');
        let processor = parts.next().unwrap_or_default();
        if processor.is_empty() {
            return Err(TargetIdError::EmptyProcessor(s.to_owned()));
        }
        let mut id = TargetId::new(processor);
        let mut seen = (false, false);
        for feature in parts {
            let (name, setting) = if let Some(n) = feature.strip_suffix('+') {
                (n, Feature::On)
            } else if let Some(n) = feature.strip_suffix('-') {
                (n, Feature::Off)
            } else {
                return Err(TargetIdError::MissingSign {
                    id: s.to_owned(),
                    feature: feature.to_owned(),
                });
            };
            let (slot, was_seen) = match name {
                "xnack" => (&mut id.xnack, &mut seen.0),
                "sramecc" => (&mut id.sramecc, &mut seen.1),
                _ => {
                    return Err(TargetIdError::UnknownFeature {
                        id: s.to_owned(),
                        feature: feature.to_owned(),
                    });
                }
            };
            if *was_seen {
                return Err(TargetIdError::DuplicateFeature {
                    id: s.to_owned(),
                    feature: name.to_owned(),
                });
            }
            *was_seen = true;
            *slot = setting;
        }
        Ok(id)
    }
}

impl TargetId {
    /// Checks the processor against rocpack's EF_AMDGPU_MACH table and the features against
    /// what that processor supports, as clang does.
    ///
    /// # Errors
    /// [`TargetIdError::UnknownProcessor`] for a processor missing from the table (which may
    /// be newer than rocpack), [`TargetIdError::UnsupportedFeature`] for `:xnack±`/`:sramecc±`
    /// on a processor without that feature.
    pub fn validate(&self) -> Result<(), TargetIdError> {
        let Some(info) = crate::mach::by_name(&self.processor) else {
            return Err(TargetIdError::UnknownProcessor {
                id: self.to_string(),
                processor: self.processor.clone(),
            });
        };
        for (setting, supported, feature) in [
            (self.sramecc, info.sramecc, "sramecc"),
            (self.xnack, info.xnack, "xnack"),
        ] {
            if setting != Feature::Any && !supported {
                return Err(TargetIdError::UnsupportedFeature {
                    id: self.to_string(),
                    processor: self.processor.clone(),
                    feature,
                });
            }
        }
        Ok(())
    }
}

impl fmt::Display for TargetId {
    /// The canonical form: features in alphabetical order, `Any` omitted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.processor)?;
        if let Some(c) = self.sramecc.suffix() {
            write!(f, ":sramecc{c}")?;
        }
        if let Some(c) = self.xnack.suffix() {
            write!(f, ":xnack{c}")?;
        }
        Ok(())
    }
}

impl serde::Serialize for TargetId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_form_sorts_features() {
        let t = TargetId::parse("gfx90a:xnack+:sramecc-").unwrap();
        assert_eq!(t.to_string(), "gfx90a:sramecc-:xnack+");
        assert_eq!(TargetId::parse("gfx1030").unwrap().to_string(), "gfx1030");
        assert_eq!(
            TargetId::parse("gfx10-3-generic").unwrap().processor,
            "gfx10-3-generic"
        );
    }

    #[test]
    fn validates_features_against_the_processor() {
        assert!(
            TargetId::parse("gfx90a:sramecc+:xnack-")
                .unwrap()
                .validate()
                .is_ok()
        );
        assert!(TargetId::parse("gfx1030").unwrap().validate().is_ok());
        assert!(matches!(
            TargetId::parse("gfx1030:xnack+").unwrap().validate(),
            Err(TargetIdError::UnsupportedFeature {
                feature: "xnack",
                ..
            })
        ));
        assert!(matches!(
            TargetId::parse("gfx900:sramecc-").unwrap().validate(),
            Err(TargetIdError::UnsupportedFeature {
                feature: "sramecc",
                ..
            })
        ));
        assert!(matches!(
            TargetId::parse("gfx9999").unwrap().validate(),
            Err(TargetIdError::UnknownProcessor { .. })
        ));
    }

    #[test]
    fn rejects_malformed_ids() {
        assert!(matches!(
            TargetId::parse(""),
            Err(TargetIdError::EmptyProcessor(_))
        ));
        assert!(matches!(
            TargetId::parse(":xnack+"),
            Err(TargetIdError::EmptyProcessor(_))
        ));
        assert!(matches!(
            TargetId::parse("gfx90a:xnack"),
            Err(TargetIdError::MissingSign { .. })
        ));
        assert!(matches!(
            TargetId::parse("gfx90a:wave64+"),
            Err(TargetIdError::UnknownFeature { .. })
        ));
        assert!(matches!(
            TargetId::parse("gfx90a:xnack+:xnack-"),
            Err(TargetIdError::DuplicateFeature { .. })
        ));
    }
}
