//! How reports name things: a GPU (a product, or a processor with its products) and a library
//! (the shortest trailing part of its path that tells it apart from the report's other rows).

use std::collections::HashMap;

use rocpack_amdgpu::catalogue;

use crate::evaluate::Gpu;

impl Gpu {
    /// The catalogue's products of this GPU's processor, in catalogue order; empty for a
    /// processor the catalogue names no product for.
    pub fn products(&self) -> Vec<String> {
        catalogue::find(&self.target.processor)
            .map(|g| g.marketing.iter().map(|p| p.name.clone()).collect())
            .unwrap_or_default()
    }

    /// One line naming the GPU. A product (given by name, or detected) is labelled with it:
    /// `gfx1031 — Radeon RX 6700 XT`. A processor is not a product: `gfx1100` is labelled as a
    /// processor with every product of it, `gfx1100 (processor; products: Radeon PRO W7900, …)`.
    pub fn label(&self) -> String {
        if let Some(name) = &self.name {
            return format!("{} — {name}", self.target);
        }
        let products = self.products();
        if products.is_empty() {
            format!("{} (processor; no product in the catalogue)", self.target)
        } else {
            format!(
                "{} (processor; products: {})",
                self.target,
                products.join(", ")
            )
        }
    }
}

/// A label per path: the fewest trailing `/`-separated components that no other path ends
/// with, so that `a/cupy/cub.so` and `b/cupy/cub.so` become `a/cupy/cub.so` and
/// `b/cupy/cub.so` while a lone `libx.so` stays `libx.so`. A package member's path
/// (`PACKAGE!/MEMBER`) counts `PACKAGE!` as one component, so members of two packages that are
/// otherwise equal are told apart by the package. A path that is a trailing part of another
/// (`lib/x.so` and `/opt/lib/x.so`) gets its whole self. `min` gives, per path, the fewest
/// components to show even when fewer would do (a kernel directory `rocblas/library` is
/// meaningless as `library`).
pub fn distinguishing_suffixes(paths: &[(&str, usize)]) -> Vec<String> {
    let split: Vec<Vec<&str>> = paths
        .iter()
        .map(|(p, _)| p.split('/').filter(|c| !c.is_empty()).collect())
        .collect();
    // How many paths end with each run of trailing components: a run that only its own path
    // ends with tells that path apart (rows × depth² work, not rows²).
    let mut ending: HashMap<&[&str], usize> = HashMap::new();
    for parts in &split {
        for k in 1..=parts.len() {
            if let Some(tail) = parts.get(parts.len() - k..) {
                *ending.entry(tail).or_insert(0) += 1;
            }
        }
    }
    split
        .iter()
        .zip(paths)
        .map(|(parts, (path, min))| {
            let unique = (*min.max(&1)..parts.len()).find_map(|k| {
                parts
                    .get(parts.len() - k..)
                    .filter(|tail| ending.get(tail) == Some(&1))
            });
            match unique {
                Some(tail) => tail.join("/"),
                // Nothing shorter will do: the path as written, leading `/` included.
                None => (*path).to_owned(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocpack_amdgpu::TargetId;

    fn labels(paths: &[&str]) -> Vec<String> {
        let with_min: Vec<(&str, usize)> = paths.iter().map(|p| (*p, 1)).collect();
        distinguishing_suffixes(&with_min)
    }

    #[test]
    fn same_named_libraries_get_the_fewest_components_that_tell_them_apart() {
        assert_eq!(
            labels(&[
                "/w/cupy_rocm_6_0.whl!/cupy/cuda/cub.cpython-311-x86_64-linux-gnu.so",
                "/w/cupy_rocm_7_0.whl!/cupy/cuda/cub.cpython-311-x86_64-linux-gnu.so",
                "/w/other.whl!/other/cub.cpython-311-x86_64-linux-gnu.so",
                "/w/other.whl!/other/libunique.so",
            ]),
            [
                "cupy_rocm_6_0.whl!/cupy/cuda/cub.cpython-311-x86_64-linux-gnu.so",
                "cupy_rocm_7_0.whl!/cupy/cuda/cub.cpython-311-x86_64-linux-gnu.so",
                "other/cub.cpython-311-x86_64-linux-gnu.so",
                "libunique.so",
            ]
        );
    }

    #[test]
    fn a_path_that_ends_another_is_shown_whole() {
        assert_eq!(
            labels(&["lib/x.so", "/opt/lib/x.so", "/usr/lib/x.so", "/usr/a/x.so"]),
            ["lib/x.so", "/opt/lib/x.so", "/usr/lib/x.so", "a/x.so"]
        );
        assert_eq!(labels(&["/a/x.so", "/a/x.so"]), ["/a/x.so", "/a/x.so"]);
        assert_eq!(labels(&[]), Vec::<String>::new());
    }

    #[test]
    fn a_minimum_keeps_kernel_directories_readable() {
        assert_eq!(
            distinguishing_suffixes(&[
                ("/opt/rocm/lib/rocblas/library", 2),
                ("/opt/rocm/lib/libx.so", 1)
            ]),
            ["rocblas/library", "libx.so"]
        );
    }

    #[test]
    fn a_processor_is_labelled_with_its_products_and_a_product_with_itself() {
        let processor = Gpu {
            given: "gfx1100".into(),
            target: TargetId::new("gfx1100"),
            name: None,
        };
        let label = processor.label();
        assert!(
            label.starts_with("gfx1100 (processor; products: "),
            "{label}"
        );
        for p in ["Radeon RX 7900 XTX", "Radeon PRO W7900 Dual Slot"] {
            assert!(label.contains(p), "{label}");
        }
        let product = Gpu {
            name: Some("Radeon RX 7900 XTX".into()),
            ..processor
        };
        assert_eq!(product.label(), "gfx1100 — Radeon RX 7900 XTX");
    }
}
