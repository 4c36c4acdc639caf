//! The coverage report as one self-contained HTML file: no network, no external scripts or
//! styles. A heat map of libraries × GPU targets that sorts by any column, a filter, and a
//! detail section per library with its bytes per target.

use std::fmt::Write as _;

use crate::output::human_size;
use rocpack_amdgpu::compat::Verdict;

use rocpack_check::label::distinguishing_suffixes;
use rocpack_check::matrix::{Matrix, letter};

/// What the report is about, shown in its header.
#[derive(Debug, Clone, Default)]
pub struct ReportInfo {
    /// The paths scanned.
    pub inputs: Vec<String>,
    /// Policy name.
    pub policy: String,
    /// HSA_OVERRIDE_GFX_VERSION, when set.
    pub override_version: Option<String>,
    /// rocpack's version.
    pub version: String,
    /// Files and members examined.
    pub examined: usize,
    /// Files that could not be read completely.
    pub errors: usize,
}

/// Escapes text for HTML element content and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Sort rank of a verdict: higher runs better.
fn verdict_rank(v: Verdict) -> u8 {
    match v {
        Verdict::Native => 4,
        Verdict::Generic => 3,
        Verdict::Policy => 2,
        Verdict::Override => 1,
        Verdict::None => 0,
    }
}

/// The row labels: each library by the fewest trailing path components that tell it apart from
/// the other rows ([`distinguishing_suffixes`]): `libx.so` alone, `cupy_rocm_7_0.whl!/cupy/cub.so`
/// where two packages hold the same member. A Tensile directory needs two components and reads
/// `rocblas/library` unless more are needed.
fn row_labels(matrix: &Matrix) -> Vec<String> {
    let paths: Vec<(&str, usize)> = matrix
        .rows
        .iter()
        .map(|r| {
            (
                r.library.as_str(),
                if r.kind == "tensile-dir" { 2 } else { 1 },
            )
        })
        .collect();
    let suffixes = distinguishing_suffixes(&paths);
    // `rocblas/4.4.1/library` reads better as `rocblas/library`, where no other row would read so.
    let shorts: Vec<Option<String>> = suffixes
        .iter()
        .zip(&matrix.rows)
        .map(|(label, r)| {
            (r.kind == "tensile-dir" && label.split('/').count() <= 2)
                .then(|| short_name(&r.library, r.kind))
        })
        .collect();
    suffixes
        .iter()
        .zip(&shorts)
        .enumerate()
        .map(|(i, (label, short))| match short {
            Some(s)
                if suffixes
                    .iter()
                    .zip(&shorts)
                    .enumerate()
                    .all(|(j, (l, o))| j == i || (l != s && o.as_ref() != Some(s))) =>
            {
                s.clone()
            }
            _ => label.clone(),
        })
        .collect()
}

/// A row label as HTML: its directory part and its file name in separate spans, so that a long
/// label is shortened in the directory part, never in the file name first.
fn label_html(label: &str) -> String {
    match label.rsplit_once('/') {
        Some((dir, base)) => format!(
            "<span class=\"pre\">{}/</span><span class=\"base\">{}</span>",
            esc(dir),
            esc(base)
        ),
        None => format!("<span class=\"base\">{}</span>", esc(label)),
    }
}

/// The last path component of a library path (`PACKAGE!/a/b/libx.so` → `libx.so`), or the
/// last two for a Tensile directory (`rocblas/library`).
fn short_name(path: &str, kind: &str) -> String {
    let parts: Vec<&str> = path.rsplit('/').filter(|p| !p.is_empty()).collect();
    match (kind, parts.as_slice()) {
        ("tensile-dir", [last, .., component]) if parts.len() >= 3 => {
            // rocblas/4.4.1/library → rocblas/…/library
            let _ = component;
            let comp = parts
                .iter()
                .find(|p| **p == "rocblas" || **p == "hipblaslt")
                .copied()
                .unwrap_or(last);
            format!("{comp}/{last}")
        }
        (_, [last, ..]) => (*last).to_owned(),
        _ => path.to_owned(),
    }
}

const STYLE: &str = r#"
:root { --native:#1a9850; --generic:#66bd63; --policy:#d9a400; --override:#f46d43; --none:#d73027;
        --bg:#fff; --fg:#1b1f24; --muted:#5b6470; --line:#e3e6ea; }
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; }
.meta { color: var(--muted); margin-bottom: 16px; }
.summary { display: flex; gap: 12px; flex-wrap: wrap; margin: 12px 0 18px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; min-width: 140px; }
.card b { display: block; font-size: 20px; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 14px; height: 14px; border-radius: 3px; vertical-align: -2px;
            margin-right: 5px; }
.controls { margin: 10px 0; }
.controls input { font: inherit; padding: 5px 8px; width: 320px; border: 1px solid #c5cad1;
                  border-radius: 6px; }
.wrap { overflow: auto; max-height: 80vh; border: 1px solid var(--line); border-radius: 8px; }
table.matrix { border-collapse: separate; border-spacing: 0; }
.matrix th, .matrix td { border-bottom: 1px solid var(--line); padding: 0; }
.matrix thead th { position: sticky; top: 0; background: #f6f8fa; z-index: 2; cursor: pointer;
                   user-select: none; font-weight: 600; }
.matrix thead th.gpu { writing-mode: vertical-rl; transform: rotate(180deg); padding: 8px 4px;
                       height: 120px; text-align: left; white-space: nowrap; min-width: 30px; }
.matrix thead th.lib, .matrix thead th.num { padding: 6px 10px; text-align: left; vertical-align: bottom; }
.matrix th.sorted-asc::after { content: " ▲"; } .matrix th.sorted-desc::after { content: " ▼"; }
.matrix tbody th { position: sticky; left: 0; background: #fff; z-index: 1; text-align: left;
                   font-weight: normal; padding: 4px 10px; white-space: nowrap; max-width: 520px;
                   overflow: hidden; text-overflow: ellipsis; }
/* A long label gives up the middle of its directory part first: the start (a package) and the
   file name stay readable. */
.lab { display: inline-flex; max-width: 500px; vertical-align: bottom; }
.lab .pre { flex: 0 1000 auto; min-width: 3em; overflow: hidden; text-overflow: ellipsis; }
.lab .base { flex: 0 1 auto; min-width: 0; overflow: hidden; text-overflow: ellipsis; }
.matrix td.num { padding: 4px 10px; text-align: right; white-space: nowrap; color: var(--muted); }
.matrix td.v { width: 30px; height: 26px; text-align: center; color: #fff; font-size: 11px;
               font-weight: 700; border-left: 1px solid #fff; }
.v.native { background: var(--native); } .v.generic { background: var(--generic); }
.v.policy { background: var(--policy); } .v.override { background: var(--override); }
.v.none { background: #f3d3d0; color: var(--none) !important; }
.matrix tfoot td, .matrix tfoot th { position: sticky; bottom: 0; background: #f6f8fa; padding: 4px;
                   text-align: center; font-size: 12px; border-top: 1px solid var(--line); }
.err { color: var(--none); font-weight: 600; }
details { border: 1px solid var(--line); border-radius: 8px; padding: 6px 12px; margin: 6px 0; }
details summary { cursor: pointer; }
table.detail { border-collapse: collapse; margin: 8px 0; }
table.detail td, table.detail th { padding: 2px 10px; border-bottom: 1px solid var(--line); text-align: left; }
table.detail td.r { text-align: right; }
.bar { display: inline-block; height: 10px; background: #4575b4; border-radius: 2px; vertical-align: middle; }
code { font-size: 12px; }
"#;

const SCRIPT: &str = r#"
(function () {
  var table = document.getElementById('matrix');
  var body = table.tBodies[0];
  var heads = table.tHead.rows[0].cells;
  function key(row, col) {
    var c = row.cells[col];
    var k = c.getAttribute('data-k');
    return k === null ? c.textContent.toLowerCase() : parseFloat(k);
  }
  Array.prototype.forEach.call(heads, function (th, col) {
    th.addEventListener('click', function () {
      var desc = !th.classList.contains('sorted-desc');
      Array.prototype.forEach.call(heads, function (h) { h.classList.remove('sorted-asc', 'sorted-desc'); });
      th.classList.add(desc ? 'sorted-desc' : 'sorted-asc');
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a, col), y = key(b, col);
        var r = x < y ? -1 : x > y ? 1 : 0;
        return desc ? -r : r;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  var filter = document.getElementById('filter');
  filter.addEventListener('input', function () {
    var q = filter.value.toLowerCase();
    Array.prototype.forEach.call(body.rows, function (r) {
      r.style.display = r.cells[0].textContent.toLowerCase().indexOf(q) >= 0 ||
        (r.cells[0].title || '').toLowerCase().indexOf(q) >= 0 ? '' : 'none';
    });
  });
})();
"#;

/// Renders the report.
pub fn render(matrix: &Matrix, info: &ReportInfo) -> String {
    let mut h = String::with_capacity(64 * 1024);
    let total_size: u64 = matrix.rows.iter().map(|r| r.size).sum();
    let code_size: u64 = matrix
        .rows
        .iter()
        .map(|r| r.bytes_per_processor.values().sum::<u64>())
        .sum();
    let everywhere = matrix
        .rows
        .iter()
        .filter(|r| r.cells.iter().all(|c| c.verdict != Verdict::None))
        .count();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>rocpack coverage report</title><style>{STYLE}</style></head><body>\n"
    );
    let _ = write!(
        h,
        "<h1>GPU coverage</h1><div class=\"meta\">{} · policy <b>{}</b>{} · rocpack {}</div>",
        esc(&info.inputs.join(", ")),
        esc(&info.policy),
        info.override_version
            .as_deref()
            .map(|v| format!(" · HSA_OVERRIDE_GFX_VERSION=<b>{}</b>", esc(v)))
            .unwrap_or_default(),
        esc(&info.version)
    );
    let _ = write!(
        h,
        "<div class=\"summary\">\
         <div class=\"card\"><b>{}</b>libraries with GPU code</div>\
         <div class=\"card\"><b>{}</b>GPU targets</div>\
         <div class=\"card\"><b>{}</b>run on every target</div>\
         <div class=\"card\"><b>{}</b>of files ({} device code, uncompressed)</div>\
         <div class=\"card\"><b>{}</b>files examined</div>\
         <div class=\"card\"><b{}>{}</b>files with read errors</div></div>",
        matrix.rows.len(),
        matrix.columns.len(),
        everywhere,
        human_size(total_size),
        human_size(code_size),
        info.examined,
        if info.errors > 0 {
            " class=\"err\""
        } else {
            ""
        },
        info.errors
    );
    h.push_str(
        "<div class=\"legend\">\
         <span><i style=\"background:var(--native)\"></i>native code object</span>\
         <span><i style=\"background:var(--generic)\"></i>generic target</span>\
         <span><i style=\"background:var(--policy)\"></i>only under the policy</span>\
         <span><i style=\"background:var(--override)\"></i>only with the override</span>\
         <span><i style=\"background:#f3d3d0\"></i>does not run</span></div>\n",
    );
    h.push_str(
        "<div class=\"controls\"><input id=\"filter\" type=\"search\" \
         placeholder=\"Filter libraries…\" aria-label=\"Filter libraries\"> \
         <span class=\"meta\">Click a column header to sort.</span></div>\n",
    );
    h.push_str("<div class=\"wrap\"><table class=\"matrix\" id=\"matrix\"><thead><tr>");
    h.push_str("<th class=\"lib\">library</th><th class=\"num\">size</th>");
    for c in &matrix.columns {
        let title = if c.gpu.given == c.gpu.target.to_string() {
            c.gpu.label()
        } else {
            format!("{}: {}", c.gpu.given, c.gpu.label())
        };
        let _ = write!(
            h,
            "<th class=\"gpu\" title=\"{}\">{}</th>",
            esc(&title),
            esc(&c.gpu.given)
        );
    }
    h.push_str("</tr></thead><tbody>\n");
    let labels = row_labels(matrix);
    for (i, (r, label)) in matrix.rows.iter().zip(&labels).enumerate() {
        let _ = write!(
            h,
            "<tr><th title=\"{}\"><a class=\"lab\" href=\"#lib{i}\">{}</a>{}</th><td class=\"num\" data-k=\"{}\">{}</td>",
            esc(&r.library),
            label_html(label),
            if r.read_errors {
                " <span class=\"err\" title=\"read errors\">!</span>"
            } else {
                ""
            },
            r.size,
            human_size(r.size)
        );
        for (c, col) in r.cells.iter().zip(&matrix.columns) {
            let v = c.verdict;
            // A middle dot reads better than a full stop in the browser.
            let letter = match v {
                Verdict::None => '·',
                _ => letter(v),
            };
            let _ = write!(
                h,
                "<td class=\"v {v}\" data-k=\"{}\" title=\"{} on {}: {} — {}\">{letter}</td>",
                verdict_rank(c.verdict),
                esc(label),
                esc(&col.gpu.given),
                v,
                esc(&c.reason)
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody><tfoot><tr><th>runs on</th><td></td>");
    for c in &matrix.columns {
        let _ = write!(
            h,
            "<td title=\"{} of {} libraries run on {}\">{}</td>",
            c.runs,
            matrix.rows.len(),
            esc(&c.gpu.given),
            c.runs
        );
    }
    h.push_str("</tr></tfoot></table></div>\n");

    h.push_str("<h2>Libraries</h2>\n");
    for (i, (r, label)) in matrix.rows.iter().zip(&labels).enumerate() {
        let code: u64 = r.bytes_per_processor.values().sum();
        let _ = write!(
            h,
            "<details id=\"lib{i}\"><summary><b>{}</b> — {} · {} bundles · {} device code</summary>\
             <div class=\"meta\"><code>{}</code>{}</div>",
            esc(label),
            esc(r.kind),
            r.bundles,
            human_size(code),
            esc(&r.library),
            r.package
                .as_deref()
                .map(|p| format!(" from <code>{}</code>", esc(p)))
                .unwrap_or_default()
        );
        let max = r
            .bytes_per_processor
            .values()
            .copied()
            .max()
            .unwrap_or(1)
            .max(1);
        h.push_str("<table class=\"detail\"><tr><th>target</th><th>device code</th><th></th></tr>");
        for (p, n) in &r.bytes_per_processor {
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"r\">{}</td><td><span class=\"bar\" style=\"width:{}px\"></span></td></tr>",
                esc(p),
                human_size(*n),
                (n * 200 / max).max(1)
            );
        }
        h.push_str(
            "</table><table class=\"detail\"><tr><th>GPU</th><th>verdict</th><th>reason</th></tr>",
        );
        for (c, col) in r.cells.iter().zip(&matrix.columns) {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&col.gpu.given),
                c.verdict,
                esc(&c.reason)
            );
        }
        h.push_str("</table></details>\n");
    }
    let _ = writeln!(h, "<script>{SCRIPT}</script></body></html>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_that_matters() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn short_names() {
        assert_eq!(
            short_name("/x.deb!/usr/lib/librocsparse.so.1", "elf"),
            "librocsparse.so.1"
        );
        assert_eq!(
            short_name(
                "/usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library",
                "tensile-dir"
            ),
            "rocblas/library"
        );
    }

    fn matrix_of(rows: &[(&str, &'static str)]) -> Matrix {
        Matrix {
            columns: Vec::new(),
            rows: rows
                .iter()
                .map(|(library, kind)| rocpack_check::matrix::Row {
                    library: (*library).to_owned(),
                    package: None,
                    kind,
                    size: 0,
                    bundles: 0,
                    module_bundles: 0,
                    unclassified: 0,
                    bytes_per_processor: Default::default(),
                    cells: Vec::new(),
                    read_errors: false,
                })
                .collect(),
        }
    }

    #[test]
    fn kernel_directories_read_rocblas_library_only_where_that_is_unique() {
        let one = matrix_of(&[
            (
                "/usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library",
                "tensile-dir",
            ),
            ("/usr/lib/x86_64-linux-gnu/librocblas.so.4", "elf"),
        ]);
        assert_eq!(row_labels(&one), ["rocblas/library", "librocblas.so.4"]);
        let two = matrix_of(&[
            ("/a/rocblas/4.4.1/library", "tensile-dir"),
            ("/b/rocblas/4.5.0/library", "tensile-dir"),
            ("/c/rocblas/library", "tensile-dir"),
        ]);
        assert_eq!(
            row_labels(&two),
            ["4.4.1/library", "4.5.0/library", "rocblas/library"]
        );
    }

    #[test]
    fn no_external_resources() {
        let m = Matrix {
            columns: Vec::new(),
            rows: Vec::new(),
        };
        let html = render(&m, &ReportInfo::default());
        for bad in ["http://", "https://", "src=", "<link"] {
            assert!(!html.contains(bad), "{bad}");
        }
    }
}
