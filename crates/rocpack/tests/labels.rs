//! How reports name things. A GPU given as a processor (`gfx1100`, with or without features, or
//! an alias) is labelled as that processor with its products from the catalogue; a product name
//! keeps its product label (check text and JSON, scan JSON, the HTML report). The HTML report
//! labels each library by the shortest trailing part of its path that tells it apart from the
//! other rows, with the full path in its tooltip.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use serde_json::Value;

/// rocpack in `dir`, so that paths in the output are short and stable.
fn run_in(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(rocpack_bin());
    cmd.args(args)
        .current_dir(dir)
        .env_remove("HSA_OVERRIDE_GFX_VERSION");
    output_of(&mut cmd)
}

fn ok(o: &Output) -> String {
    exited(o, 0)
}

/// Stdout of a run that exited with `code` (check exits 1 when a library does not run).
fn exited(o: &Output, code: i32) -> String {
    assert!(
        o.status.code() == Some(code),
        "exit {}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// The catalogue's products of gfx1100, from `rocpack gpus --json`, in order.
fn gfx1100_products() -> Vec<String> {
    let out = ok(&run_in(&fixtures_bin(), &["gpus", "--json", "gfx1100"]));
    let v: Vec<Value> = json_lines(&out);
    let gpu = v
        .iter()
        .find(|g| get_str(g, "name") == "gfx1100")
        .expect("gfx1100 in rocpack gpus");
    gpu["marketing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| get_str(p, "name").to_owned())
        .collect()
}

fn products_of(v: &Value) -> Vec<String> {
    v["products"]
        .as_array()
        .unwrap_or_else(|| panic!("no products in {v}"))
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn check_labels_a_processor_as_a_processor_with_its_products() {
    let products = gfx1100_products();
    assert!(products.len() > 1, "{products:?}");
    // tu2.o has no code for fiji (gfx803): exit 1.
    let text = exited(
        &run_in(
            &fixtures_bin(),
            &["check", "tu2.o", "--gpu", "gfx1100", "--gpu", "fiji"],
        ),
        1,
    );
    let first = text.lines().next().unwrap();
    assert_eq!(
        first,
        format!(
            "GPU 1: gfx1100 (processor; products: {})",
            products.join(", ")
        )
    );
    insta::assert_snapshot!(text);

    let json = json_lines(&exited(
        &run_in(
            &fixtures_bin(),
            &["check", "--json", "tu2.o", "--gpu", "gfx1100,gfx90a:xnack+"],
        ),
        1,
    ));
    let gpu = &json[0];
    assert_eq!(get_str(gpu, "type"), "gpu");
    assert_eq!(gpu["name"], Value::Null, "{gpu}");
    assert_eq!(products_of(gpu), products);
    // With target features it is still a processor.
    assert_eq!(get_str(&json[1], "target"), "gfx90a:xnack+");
    assert_eq!(json[1]["name"], Value::Null, "{}", json[1]);
    assert!(
        products_of(&json[1]).iter().any(|p| p.contains("MI210")),
        "{}",
        json[1]
    );
}

#[test]
fn check_keeps_the_product_a_user_named() {
    let text = ok(&run_in(
        &fixtures_bin(),
        &["check", "tu2.o", "--gpu", "AMD Radeon RX 7900 XTX"],
    ));
    assert!(
        text.starts_with(
            "GPU 1: gfx1100 — Radeon RX 7900 XTX (given as \"AMD Radeon RX 7900 XTX\")\n"
        ),
        "{text}"
    );
    insta::assert_snapshot!(text);
    let json = json_lines(&ok(&run_in(
        &fixtures_bin(),
        &["check", "--json", "tu2.o", "--gpu", "RX 7900 XTX"],
    )));
    assert_eq!(get_str(&json[0], "name"), "Radeon RX 7900 XTX");
    assert_eq!(products_of(&json[0]), gfx1100_products());
}

/// The `target` records of `scan --json`.
fn scan_columns(args: &[&str]) -> Vec<Value> {
    json_lines(&ok(&run_in(&fixtures_bin(), args)))
        .into_iter()
        .filter(|r| get_str(r, "type") == "target")
        .collect()
}

#[test]
fn scan_columns_are_processors_unless_a_product_is_named() {
    let cols = scan_columns(&["scan", "--json", "tu2.o"]);
    let gfx1100 = cols
        .iter()
        .find(|c| get_str(c, "target") == "gfx1100")
        .expect("a gfx1100 column");
    assert_eq!(gfx1100["name"], Value::Null, "{gfx1100}");
    assert_eq!(products_of(gfx1100), gfx1100_products());

    let cols = scan_columns(&["scan", "--json", "tu2.o", "--gpu", "RX 7900 XTX"]);
    let named: Vec<&Value> = cols
        .iter()
        .filter(|c| get_str(c, "target") == "gfx1100")
        .collect();
    assert_eq!(named.len(), 1, "{cols:?}");
    assert_eq!(get_str(named[0], "name"), "Radeon RX 7900 XTX");
}

/// The text of an HTML fragment.
fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// (tooltip, label) of each row of the report's heat map.
fn report_rows(html: &str) -> Vec<(String, String)> {
    let body = html.split("<tbody>").nth(1).unwrap();
    let body = body.split("</tbody>").next().unwrap();
    body.split("<tr><th title=\"")
        .skip(1)
        .map(|row| {
            let (title, rest) = row.split_once('"').unwrap();
            let label = rest.split_once("\">").unwrap().1;
            let label = label.split_once("</a>").unwrap().0;
            (html_unescape(title), html_unescape(&strip_tags(label)))
        })
        .collect()
}

/// The `title` of the report's column header for `gpu`.
fn column_title(html: &str, gpu: &str) -> String {
    let head = html.split("<thead>").nth(1).unwrap();
    let head = head.split("</thead>").next().unwrap();
    head.split("<th class=\"gpu\" title=\"")
        .skip(1)
        .map(|c| c.split_once("</th>").unwrap().0)
        .find_map(|c| {
            let (title, label) = c.split_once("\">").unwrap();
            (html_unescape(label) == gpu).then(|| html_unescape(title))
        })
        .unwrap_or_else(|| panic!("no column {gpu}"))
}

/// A wheel (a zip written by Python's zipfile, not by rocpack) holding `members`, each a copy of
/// a fixture: (member path, fixture name).
fn wheel(path: &Path, members: &[(&str, &str)]) {
    let mut cmd = Command::new("python3");
    cmd.arg("-c").arg(
        "import sys, zipfile\n\
         z = zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED)\n\
         for i in range(2, len(sys.argv), 2): z.write(sys.argv[i + 1], sys.argv[i])\n\
         z.close()",
    );
    cmd.arg(path);
    for (member, fixture) in members {
        cmd.arg(member).arg(fixtures_bin().join(fixture));
    }
    run_ok(&mut cmd);
}

#[test]
fn report_tells_same_named_libraries_apart() {
    let tmp = tempdir();
    let cub = "cupy/cuda/cub.cpython-311-x86_64-linux-gnu.so";
    wheel(
        &tmp.path()
            .join("cupy_rocm_6_0-13.6.0-cp311-cp311-manylinux_2_28_x86_64.whl"),
        &[(cub, "lib3tu-lld.so")],
    );
    wheel(
        &tmp.path()
            .join("cupy_rocm_7_0-13.6.0-cp311-cp311-manylinux_2_28_x86_64.whl"),
        &[(cub, "lib3tu-bfd.so")],
    );
    wheel(
        &tmp.path().join("other-1.0-py3-none-any.whl"),
        &[
            (
                "other/cub.cpython-311-x86_64-linux-gnu.so",
                "lib2tu-compressed.so",
            ),
            ("other/libunique.so", "lib3tu-mixed.so"),
        ],
    );
    let report = tmp.path().join("report.html");
    let o = run_in(
        tmp.path(),
        &[
            "scan",
            "-q",
            ".",
            "--gpu",
            "gfx1100",
            "--report",
            "report.html",
        ],
    );
    ok(&o);
    let html = std::fs::read_to_string(&report).unwrap();
    let mut rows = report_rows(&html);
    rows.sort();
    let full = |w: &str, m: &str| format!("./{w}!/{m}");
    let mut want = vec![
        (
            full(
                "cupy_rocm_6_0-13.6.0-cp311-cp311-manylinux_2_28_x86_64.whl",
                cub,
            ),
            format!("cupy_rocm_6_0-13.6.0-cp311-cp311-manylinux_2_28_x86_64.whl!/{cub}"),
        ),
        (
            full(
                "cupy_rocm_7_0-13.6.0-cp311-cp311-manylinux_2_28_x86_64.whl",
                cub,
            ),
            format!("cupy_rocm_7_0-13.6.0-cp311-cp311-manylinux_2_28_x86_64.whl!/{cub}"),
        ),
        (
            full(
                "other-1.0-py3-none-any.whl",
                "other/cub.cpython-311-x86_64-linux-gnu.so",
            ),
            "other/cub.cpython-311-x86_64-linux-gnu.so".to_owned(),
        ),
        (
            full("other-1.0-py3-none-any.whl", "other/libunique.so"),
            "libunique.so".to_owned(),
        ),
    ];
    want.sort();
    assert_eq!(rows, want);
    // Labels are unique, and the detail sections use them too.
    for (_, label) in &rows {
        assert!(
            html.contains(&format!("<summary><b>{label}</b>")),
            "{label}"
        );
    }

    let title = column_title(&html, "gfx1100");
    assert!(
        title.starts_with("gfx1100 (processor; products: Radeon PRO W7900 Dual Slot, "),
        "{title}"
    );
}
