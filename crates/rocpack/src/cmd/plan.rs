//! `rocpack plan`: GPU targets chosen coherently across the ROCm stack, and `plan verify`.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};
use rocpack_plan::kb::Severity;
use rocpack_plan::model::{
    ComponentPlan, FindingStatus, Plan, Request, Status as PlanStatus, Tool, unverified,
};
use rocpack_plan::{Knowledge, planner};

use crate::args::{Global, PlanArgs};
use crate::cmd::gpu_arg;
use crate::output::{self, Exit};
use crate::records;

use crate::args::PlanFormat as Format;

fn format_of(args: &PlanArgs, global: &Global) -> Result<(Format, Tool)> {
    let format = if global.json {
        Format::Json
    } else {
        args.format
    };
    let tool = match (args.for_tool, format) {
        (Some(t), Format::Tool(f)) if t != f => {
            bail!("--for {} contradicts --format {}", t.as_str(), f.as_str())
        }
        (_, Format::Tool(f)) => f,
        (Some(t), _) => t,
        (None, _) => Tool::Cmake,
    };
    Ok((format, tool))
}

pub fn run(global: &Global, args: &PlanArgs) -> Result<Exit> {
    let kb = Knowledge::embedded().map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(crate::args::PlanCommand::Verify(v)) = &args.command {
        return verify(global, kb, v);
    }
    let release = match &args.release {
        Some(r) => r.trim().to_owned(),
        None => kb.newest_release().unwrap_or_default().to_owned(),
    };
    if args.list_components {
        return list_components(global, kb, &release);
    }
    if args.list_families {
        return list_families(global, kb, &release);
    }
    let (format, tool) = format_of(args, global)?;
    let request = Request {
        gpus: args
            .gpu
            .iter()
            .map(|g| target_of(g))
            .collect::<Result<Vec<_>>>()?,
        families: args.family.clone(),
        components: (!args.components.is_empty()).then(|| args.components.clone()),
        set: args
            .set
            .iter()
            .map(|s| planner::parse_set(kb, s))
            .collect::<Result<Vec<_>, _>>()?,
    };
    let plan = planner::plan(kb, &request, &release, tool)?;
    let status = if plan.summary.errors > 0 {
        Exit::NoMatch
    } else {
        Exit::Ok
    };

    let (stdout, files) = match format {
        // One line on stdout (JSON Lines, like every --json); indented in a file.
        Format::Json => (
            serde_json::to_string(&plan)? + "\n",
            vec![(
                "plan.json".to_owned(),
                serde_json::to_string_pretty(&plan)? + "\n",
            )],
        ),
        Format::Text => {
            if args.output.is_some() {
                bail!("-o needs --format json, cmake, spack, gentoo, nix or therock");
            }
            let mut out = io::stdout().lock();
            render_text(kb, &plan, &mut out)?;
            return Ok(status);
        }
        Format::Tool(t) => {
            let e = rocpack_plan::emit::emit(kb, &plan, t);
            (e.stdout, e.files)
        }
    };
    match &args.output {
        None => io::stdout().lock().write_all(stdout.as_bytes())?,
        Some(dir) => {
            write_files(dir, &files)?;
            if !global.quiet {
                for (name, _) in &files {
                    eprintln!("rocpack: wrote {}", dir.join(name).display());
                }
            }
        }
    }
    if plan.summary.errors > 0 && !global.quiet && format != Format::Text {
        eprintln!(
            "rocpack: the plan has {} open error(s); `rocpack plan` without --format explains them",
            plan.summary.errors
        );
    }
    Ok(status)
}

/// A `--gpu` value as a target ID: target IDs and generic targets as given, product names and
/// aliases through the catalogue.
fn target_of(given: &str) -> Result<String> {
    let g = given.trim();
    if let Ok(t) = rocpack_amdgpu::TargetId::parse(g) {
        if rocpack_amdgpu::catalogue::find(&t.processor).is_some() {
            return Ok(g.to_owned());
        }
    }
    Ok(gpu_arg::resolve(g)?.target.to_string())
}

/// Writes each file under `dir` (created if needed) atomically.
fn write_files(dir: &Path, files: &[(String, String)]) -> Result<()> {
    for (name, text) in files {
        let dest = dir.join(name);
        let parent = dest.parent().unwrap_or(dir);
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        output::write_atomically(&dest, text.as_bytes())
            .with_context(|| format!("writing {}", dest.display()))?;
    }
    Ok(())
}

fn list_components(global: &Global, kb: &Knowledge, release: &str) -> Result<Exit> {
    let Some(rel) = kb.releases.get(release) else {
        bail!("no knowledge of ROCm {release}");
    };
    let mut rows = Vec::new();
    for name in &rel.release.build_order {
        let info = &kb.components[name];
        let rc = &rel.components[name];
        rows.push(records::PlanComponent {
            aliases: &info.aliases,
            deps: &rc.deps,
            device_code: info.device_code.as_str(),
            kind: &info.kind,
            name,
            optional_deps: rc
                .optional_deps
                .iter()
                .map(|d| records::PlanOptionalDep {
                    default: &d.default,
                    name: &d.name,
                    option: &d.option,
                })
                .collect(),
            target_variable: rc.targets.as_ref().map(|t| t.variable.as_str()),
        });
    }
    let mut out = io::stdout().lock();
    if global.json {
        for r in rows {
            serde_json::to_writer(&mut out, &r)?;
            writeln!(out)?;
        }
        return Ok(Exit::Ok);
    }
    writeln!(
        out,
        "ROCm {release}: {} components in build order",
        rows.len()
    )?;
    for name in &rel.release.build_order {
        let info = &kb.components[name];
        let rc = &rel.components[name];
        let var = rc
            .targets
            .as_ref()
            .map(|t| format!("  targets: {}", t.variable))
            .unwrap_or_default();
        let aliases = if info.aliases.is_empty() {
            String::new()
        } else {
            format!("  (also {})", info.aliases.join(", "))
        };
        writeln!(
            out,
            "  {name:<22} {:<9} {:<12}{var}{aliases}",
            info.kind,
            info.device_code.as_str()
        )?;
    }
    Ok(Exit::Ok)
}

fn list_families(global: &Global, kb: &Knowledge, release: &str) -> Result<Exit> {
    if !kb.releases.contains_key(release) {
        bail!("no knowledge of ROCm {release}");
    }
    let fams = planner::families(kb, release);
    let mut out = io::stdout().lock();
    for f in &fams {
        if global.json {
            writeln!(out, "{}", serde_json::to_string(f)?)?;
        } else {
            writeln!(
                out,
                "{:<20} {:<45} {}",
                f.family,
                f.defined_by,
                f.targets.join(" ")
            )?;
        }
    }
    Ok(Exit::Ok)
}

/// Human-readable plan.
pub fn render_text(kb: &Knowledge, plan: &Plan, out: &mut impl Write) -> io::Result<()> {
    let s = &plan.summary;
    writeln!(
        out,
        "ROCm {} ({}) for {} — settings for {}",
        plan.release,
        plan.point_releases.join(", "),
        plan.targets.join(" "),
        plan.tool.as_str()
    )?;
    for f in &plan.families {
        writeln!(
            out,
            "  family {}: {} ({})",
            f.family,
            f.targets.join(" "),
            f.defined_by
        )?;
    }
    writeln!(
        out,
        "{} components: {} built, {} not built · {} open error(s), {} warning(s), {} resolved by the plan",
        s.components, s.built, s.skipped, s.errors, s.warnings, s.resolved
    )?;

    writeln!(out)?;
    let with_targets: Vec<&ComponentPlan> = plan
        .components
        .iter()
        .filter(|c| c.targets.is_some())
        .collect();
    let width = with_targets
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(10);
    for c in &with_targets {
        let targets = c.targets.as_deref().unwrap_or_default();
        match c.status {
            PlanStatus::Skip => writeln!(
                out,
                "  {:<width$}  not built: {}",
                c.name,
                c.skip_reason.as_deref().unwrap_or("")
            )?,
            PlanStatus::Build => {
                let list = if targets.is_empty() {
                    "(no target)".to_owned()
                } else {
                    targets.join(" ")
                };
                let conf = c
                    .confidence
                    .as_deref()
                    .map(|c| format!("  [{}]", unverified(c)))
                    .unwrap_or_default();
                writeln!(out, "  {:<width$}  {list}{conf}", c.name)?;
                let args: Vec<String> = c
                    .settings
                    .iter()
                    .map(|s| format!("-D{}={}", s.name, s.value))
                    .collect();
                if !args.is_empty() {
                    writeln!(out, "  {:<width$}    {}", "", args.join(" "))?;
                }
            }
        }
    }
    let plain: Vec<&str> = plan
        .components
        .iter()
        .filter(|c| c.targets.is_none())
        .map(|c| c.name.as_str())
        .collect();
    if !plain.is_empty() {
        writeln!(out, "  no target selection: {}", plain.join(", "))?;
    }

    // One line per component and reason, with every target it applies to.
    let mut excluded: Vec<(&str, &str, Vec<&str>, &str)> = Vec::new();
    for c in plan.components.iter().filter(|c| c.is_built()) {
        for e in &c.excluded {
            match excluded
                .iter_mut()
                .find(|(n, r, _, _)| *n == c.name && *r == e.reason)
            {
                Some(row) => row.2.push(&e.target),
                None => excluded.push((&c.name, &e.reason, vec![&e.target], &e.loses)),
            }
        }
    }
    if !excluded.is_empty() {
        writeln!(out, "\nExcluded targets")?;
        for (name, reason, targets, loses) in excluded {
            writeln!(out, "  {name} without {}: {reason}", targets.join(" "))?;
            let loses = if targets.len() > 1 {
                loses.replace(targets[0], &targets.join("/"))
            } else {
                loses.to_owned()
            };
            writeln!(out, "      loses: {loses}")?;
        }
    }
    let added: Vec<_> = plan
        .components
        .iter()
        .flat_map(|c| c.added.iter().map(move |a| (c, a)))
        .collect();
    if !added.is_empty() {
        writeln!(out, "\nAdded targets")?;
        for (c, a) in added {
            writeln!(out, "  {} also for {}: {}", c.name, a.target, a.reason)?;
        }
    }
    let families: Vec<&ComponentPlan> = plan
        .components
        .iter()
        .filter(|c| c.is_built() && !c.kernel_families.is_empty())
        .collect();
    if !families.is_empty() {
        writeln!(out, "\nKernel families")?;
        for c in families {
            let parts: Vec<String> = c
                .kernel_families
                .iter()
                .map(|f| {
                    if !f.enabled {
                        format!("{}: off", f.family)
                    } else if f.targets.is_empty() {
                        format!("{}: none", f.family)
                    } else if f.without.is_empty() {
                        format!("{}: all", f.family)
                    } else {
                        format!("{}: {}", f.family, f.targets.join(" "))
                    }
                })
                .collect();
            writeln!(out, "  {}  {}", c.name, parts.join(" · "))?;
            let targets = c.targets.as_deref().unwrap_or_default();
            let bare: Vec<&str> = targets
                .iter()
                .filter(|t| !c.kernel_families.iter().any(|f| f.targets.contains(t)))
                .map(String::as_str)
                .collect();
            if !bare.is_empty() {
                writeln!(
                    out,
                    "      no kernel family for {}: built for them, with none of these kernels",
                    bare.join(" ")
                )?;
            }
        }
    }
    if !plan.findings.is_empty() {
        writeln!(out, "\nFindings")?;
        for f in &plan.findings {
            let state = match f.status {
                FindingStatus::Open => f.severity.as_str().to_owned(),
                FindingStatus::Resolved => format!("{} (resolved)", f.severity.as_str()),
            };
            let conf = f
                .confidence
                .as_deref()
                .map(|c| format!(" ({})", unverified(c)))
                .unwrap_or_default();
            writeln!(out, "  {state} {} [{}]{conf}", f.id, f.component)?;
            writeln!(out, "      {}", f.message)?;
            match (&f.resolution, f.status) {
                (Some(r), _) => writeln!(out, "      → {r}")?,
                (None, FindingStatus::Open) => {
                    for r in &f.remedies {
                        writeln!(out, "      remedy: {r}")?;
                    }
                }
                _ => {}
            }
            if f.severity == Severity::Error || f.status == FindingStatus::Open {
                let cited: Vec<String> = f
                    .sources
                    .iter()
                    .filter_map(|k| kb.sources.get(k).map(|s| s.location()))
                    .filter(|l| !l.is_empty())
                    .take(2)
                    .collect();
                if !cited.is_empty() {
                    writeln!(out, "      source: {}", cited.join("; "))?;
                }
            }
        }
    }
    Ok(())
}

fn verify(global: &Global, kb: &Knowledge, args: &crate::args::PlanVerifyArgs) -> Result<Exit> {
    let text = rocpack_scan::read_regular_to_string(&args.plan)
        .with_context(|| format!("reading {}", args.plan.display()))?;
    let plan: Plan = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a rocpack plan", args.plan.display()))?;
    if plan.schema != rocpack_plan::model::SCHEMA {
        bail!(
            "{}: plan schema {:?}, this rocpack reads {:?}",
            args.plan.display(),
            plan.schema,
            rocpack_plan::model::SCHEMA
        );
    }
    let layout = args.layout;
    for p in &args.prefixes {
        if !p.is_dir() {
            bail!("{}: not a directory", p.display());
        }
    }
    let progress = output::Progress::new(global.quiet);
    let report = rocpack_plan::verify::verify_with_progress(
        kb,
        &plan,
        &args.prefixes,
        layout,
        args.root.as_deref(),
        &global.scan_options(),
        &|done, total| progress.update(done, total),
    )?;
    let mut out = io::stdout().lock();
    if global.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        super::plan_verify_text::render_text(&report, &mut out)?;
    }
    Ok(report.status().exit())
}
