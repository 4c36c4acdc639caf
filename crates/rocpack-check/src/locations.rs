//! Where ROCm code usually lives on a machine.

use std::path::{Path, PathBuf};

/// Python packages that carry ROCm device code (directory names in site-packages).
const PYTHON_PACKAGES: &[&str] = &[
    "torch",
    "torchvision",
    "torchaudio",
    "jaxlib",
    "jax_plugins",
    "cupy",
    "cupy_backends",
    "onnxruntime",
    "vllm",
    "flash_attn",
    "bitsandbytes",
    "xformers",
    "llama_cpp",
    "tensorflow",
    "triton",
];

/// The usual install locations that exist on this machine, under `root` (`/` normally):
/// `/opt/rocm*`, the multiarch library directory (`/usr/lib/x86_64-linux-gnu`), `/usr/lib64`,
/// and the ROCm-carrying Python packages (torch, jaxlib, cupy …) of every site-packages or
/// dist-packages directory under `/usr/lib`, `/usr/local/lib`, the user's `~/.local/lib`, and
/// the active virtual or conda environment.
pub fn default_paths(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let at = |p: &str| root.join(p.trim_start_matches('/'));
    if let Ok(entries) = std::fs::read_dir(at("/opt")) {
        let mut rocm: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("rocm"))
            .map(|e| e.path())
            .collect();
        rocm.sort();
        // /opt/rocm is usually a link to /opt/rocm-X.Y.Z: read it once.
        if let Ok(target) = std::fs::canonicalize(at("/opt/rocm")) {
            rocm.retain(|p| {
                p == &at("/opt/rocm") || std::fs::canonicalize(p).ok() != Some(target.clone())
            });
        }
        out.extend(rocm);
    }
    let multiarch = match std::env::consts::ARCH {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        "powerpc64" => "powerpc64le-linux-gnu",
        "riscv64" => "riscv64-linux-gnu",
        _ => "",
    };
    if !multiarch.is_empty() {
        out.push(at(&format!("/usr/lib/{multiarch}")));
    }
    out.push(at("/usr/lib64"));
    let mut python_roots = vec![at("/usr/lib"), at("/usr/local/lib")];
    if let Some(home) = std::env::var_os("HOME") {
        python_roots.push(
            root.join(
                Path::new(&home)
                    .strip_prefix("/")
                    .unwrap_or(Path::new(&home)),
            )
            .join(".local/lib"),
        );
    }
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(env) = std::env::var_os(var) {
            python_roots.push(PathBuf::from(env).join("lib"));
        }
    }
    for base in python_roots {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
            .map(|e| e.path())
            .collect();
        pythons.sort();
        for py in pythons {
            for site in ["site-packages", "dist-packages"] {
                for pkg in PYTHON_PACKAGES {
                    out.push(py.join(site).join(pkg));
                }
            }
        }
    }
    out.retain(|p| p.is_dir());
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_usual_places_under_a_root() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        for d in [
            "opt/rocm-6.4.3/lib",
            "usr/lib/python3.12/site-packages/torch/lib",
            "usr/lib/python3.12/site-packages/requests",
            "usr/local/lib/python3.11/dist-packages/jaxlib",
        ] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        let found = default_paths(r);
        assert!(found.contains(&r.join("opt/rocm-6.4.3")), "{found:?}");
        assert!(found.contains(&r.join("usr/lib/python3.12/site-packages/torch")));
        assert!(found.contains(&r.join("usr/local/lib/python3.11/dist-packages/jaxlib")));
        assert!(!found.iter().any(|p| p.ends_with("requests")));
    }
}
