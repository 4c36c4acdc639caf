//! The HTML coverage report, opened in a real browser: headless Chromium takes a screenshot of
//! `rocpack scan tests/fixtures/bin --report` and dumps the DOM after the page's script ran.
//!
//! The screenshot must show the heat map: many pixels of the native green and of the
//! "does not run" pink, in several table rows, and none of either on an empty page. The DOM must
//! hold the matrix with one row per library that `rocpack scan --json` reports.
//!
//! Chromium is required (Debian package `chromium`, installed by scripts/install-deps.sh): when
//! it is missing the test fails and says so. The screenshots and the report are kept in
//! `CARGO_TARGET_TMPDIR` (printed on failure) for a human to look at.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{describe, fixtures_bin, html_unescape, json_lines, output_of};

/// The native cell colour, `--native` in the report's style sheet.
const NATIVE: [u8; 3] = [0x1a, 0x98, 0x50];
/// The "does not run" cell background.
const NONE: [u8; 3] = [0xf3, 0xd3, 0xd0];
/// Per-channel tolerance for anti-aliasing and colour management.
const TOLERANCE: u8 = 6;
/// How long Chromium may take before it is killed.
const CHROMIUM_TIMEOUT_S: &str = "60";
/// A table cell is about 27 px high; the legend's swatches are 14 px. Bands at least this high
/// are table cells.
const MIN_CELL_HEIGHT: usize = 20;

/// Where the screenshots and the report are kept after the test.
fn keep_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-test");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`chromium` not found in PATH: run scripts/install-deps.sh, which installs the \
                 Debian package chromium; the HTML report test opens the report in it and cannot \
                 run without it"
            )
        })
}

fn timeout() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("timeout"))
        .find(|p| p.is_file())
        .expect("`timeout` (coreutils) not found in PATH")
}

/// Runs headless Chromium on `page` with `action` (`--screenshot=…` or `--dump-dom`), with a
/// fresh profile, no network services, and a time limit (`timeout` kills its whole process
/// group). Root-safe: `--no-sandbox`.
fn run_chromium(page: &Path, action: &str, profile: &Path) -> Output {
    let mut cmd = Command::new(timeout());
    cmd.args(["--kill-after=10", CHROMIUM_TIMEOUT_S])
        .arg(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            // Console messages (uncaught script errors among them) go to stderr.
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1400,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(action)
        .arg(format!("file://{}", page.display()));
    let out = output_of(&mut cmd);
    assert!(
        out.status.code() != Some(124) && out.status.code() != Some(137),
        "{} did not finish within {CHROMIUM_TIMEOUT_S} s",
        describe(&cmd)
    );
    assert!(
        out.status.success(),
        "{} failed with {}\nstderr:\n{}",
        describe(&cmd),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Takes a screenshot of `page` into `png`.
fn screenshot(page: &Path, png: &Path, profile: &Path) {
    let _ = std::fs::remove_file(png);
    run_chromium(page, &format!("--screenshot={}", png.display()), profile);
    assert!(
        png.is_file(),
        "chromium wrote no screenshot to {}",
        png.display()
    );
}

/// An RGB image.
struct Image {
    width: usize,
    height: usize,
    rgb: Vec<[u8; 3]>,
}

fn decode_png(path: &Path) -> Image {
    let file = std::fs::File::open(path).unwrap();
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder
        .read_info()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut buf = vec![0; reader.output_buffer_size().expect("image too large")];
    let info = reader
        .next_frame(&mut buf)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("{}: unexpected colour type {other:?}", path.display()),
    };
    let rgb = buf[..info.buffer_size()]
        .chunks_exact(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    Image {
        width: info.width as usize,
        height: info.height as usize,
        rgb,
    }
}

/// Where one colour shows in an image.
#[derive(Debug)]
struct Found {
    pixels: usize,
    /// Maximal runs of image rows holding the colour, as (first y, last y).
    bands: Vec<(usize, usize)>,
}

impl Found {
    /// Bands as high as a table cell.
    fn cell_bands(&self) -> usize {
        self.bands
            .iter()
            .filter(|(a, b)| b - a + 1 >= MIN_CELL_HEIGHT)
            .count()
    }
}

fn find_colour(img: &Image, colour: [u8; 3]) -> Found {
    let near = |p: &[u8; 3]| (0..3).all(|i| p[i].abs_diff(colour[i]) <= TOLERANCE);
    let per_row: Vec<usize> = (0..img.height)
        .map(|y| {
            img.rgb[y * img.width..(y + 1) * img.width]
                .iter()
                .filter(|p| near(p))
                .count()
        })
        .collect();
    let mut bands = Vec::new();
    let mut start = None;
    for (y, &n) in per_row.iter().chain(std::iter::once(&0)).enumerate() {
        match (n > 0, start) {
            (true, None) => start = Some(y),
            (false, Some(s)) => {
                bands.push((s, y - 1));
                start = None;
            }
            _ => {}
        }
    }
    Found {
        pixels: per_row.iter().sum(),
        bands,
    }
}

/// The `title` of each row header in the matrix's body: the library paths, in DOM order.
fn matrix_rows(dom: &str) -> Vec<String> {
    let table = dom
        .find("id=\"matrix\"")
        .expect("the DOM has no table with id=\"matrix\"");
    let body_start = table
        + dom[table..]
            .find("<tbody>")
            .expect("the matrix has no <tbody>");
    let body_end = body_start + dom[body_start..].find("</tbody>").unwrap();
    let body = &dom[body_start..body_end];
    let rows: Vec<&str> = body.split("<tr>").skip(1).collect();
    assert_eq!(
        rows.len(),
        body.matches("<tr").count(),
        "matrix rows with attributes"
    );
    rows.iter()
        .map(|r| {
            let at = r.find("<th title=\"").expect("row without a titled header") + 11;
            let end = at + r[at..].find('"').unwrap();
            html_unescape(&r[at..end])
        })
        .collect()
}

#[test]
fn report_shows_the_heat_map_in_a_browser() {
    // Fails at once, naming scripts/install-deps.sh, when chromium is missing.
    chromium();
    let tmp = tempfile::Builder::new()
        .prefix("rocpack-report-")
        .tempdir()
        .unwrap();
    let keep = keep_dir();
    let report = tmp.path().join("report.html");

    // The report, and the JSON it must agree with.
    let mut scan = Command::new(env!("CARGO_BIN_EXE_rocpack"));
    scan.arg("scan")
        .arg(fixtures_bin())
        .arg("--report")
        .arg(&report)
        .env_remove("HSA_OVERRIDE_GFX_VERSION");
    let out = output_of(&mut scan);
    assert!(
        out.status.success(),
        "{} failed with {}:\n{}",
        describe(&scan),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut json = Command::new(env!("CARGO_BIN_EXE_rocpack"));
    json.args(["scan", "--json"])
        .arg(fixtures_bin())
        .env_remove("HSA_OVERRIDE_GFX_VERSION");
    let out = output_of(&mut json);
    assert!(out.status.success(), "{} failed", describe(&json));
    let libraries: Vec<String> = json_lines(&String::from_utf8(out.stdout).unwrap())
        .iter()
        .filter(|r| r["type"] == "library")
        .map(|r| r["file"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        libraries.len() > 5,
        "scan --json reports only {} libraries",
        libraries.len()
    );

    let html = std::fs::read_to_string(&report).unwrap();
    std::fs::write(keep.join("report.html"), &html).unwrap();
    for bad in ["http://", "https://", "<link", "src="] {
        assert!(
            !html.contains(bad),
            "the report is not self-contained: it has {bad:?} ({})",
            keep.join("report.html").display()
        );
    }

    // The heat map, as pixels.
    let shot = keep.join("report-screenshot.png");
    screenshot(&report, &shot, &tmp.path().join("profile-report"));
    let img = decode_png(&shot);
    let (native, none) = (find_colour(&img, NATIVE), find_colour(&img, NONE));
    let see = format!("screenshot: {}", shot.display());
    // At least a handful of 30×27 px cells of each.
    assert!(
        native.pixels >= 4 * 20 * 20,
        "only {} pixels of the native green #1a9850 ({see})",
        native.pixels
    );
    assert!(
        none.pixels >= 20 * 20 * 20,
        "only {} pixels of the \"does not run\" pink #f3d3d0 ({see})",
        none.pixels
    );
    assert!(
        native.cell_bands() >= 2,
        "the native green shows in {} cell-high rows, not several: {:?} ({see})",
        native.cell_bands(),
        native.bands
    );
    assert!(
        none.cell_bands() >= 2,
        "the \"does not run\" pink shows in {} cell-high rows, not several: {:?} ({see})",
        none.cell_bands(),
        none.bands
    );

    // Sanity: an empty page has neither colour, so the counts above come from the report.
    let empty = tmp.path().join("empty.html");
    std::fs::write(
        &empty,
        "<!DOCTYPE html><html><head></head><body></body></html>\n",
    )
    .unwrap();
    let empty_shot = keep.join("empty-page-screenshot.png");
    screenshot(&empty, &empty_shot, &tmp.path().join("profile-empty"));
    let blank = decode_png(&empty_shot);
    assert_eq!((blank.width, blank.height), (img.width, img.height));
    for (name, colour) in [("native green", NATIVE), ("pink", NONE)] {
        let f = find_colour(&blank, colour);
        assert_eq!(
            f.pixels,
            0,
            "an empty page shows {} pixels of the {name} ({})",
            f.pixels,
            empty_shot.display()
        );
    }

    // The DOM once the page's script ran: one matrix row per library, in the JSON's order.
    let out = run_chromium(&report, "--dump-dom", &tmp.path().join("profile-dom"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("Uncaught"),
        "the report's script failed in chromium:\n{}",
        stderr
            .lines()
            .filter(|l| l.contains("CONSOLE"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let dom = String::from_utf8(out.stdout).expect("DOM is not UTF-8");
    std::fs::write(keep.join("report-dom.html"), &dom).unwrap();
    let rows = matrix_rows(&dom);
    assert_eq!(
        rows.len(),
        libraries.len(),
        "matrix rows in the DOM vs libraries in scan --json ({})",
        keep.join("report-dom.html").display()
    );
    assert_eq!(rows, libraries, "matrix rows vs scan --json libraries");
    let distinct: BTreeSet<&String> = rows.iter().collect();
    assert_eq!(distinct.len(), rows.len(), "a library has two rows");
}
