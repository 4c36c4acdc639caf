//! `rocpack`: inspect AMD GPU code in ROCm binaries without a GPU and without executing them.

mod args;
mod cmd;
mod html;
mod output;
mod records;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let result = match &cli.command {
        args::Command::List(a) => cmd::list::run(&cli.global, a),
        args::Command::Show(a) => cmd::show::run(&cli.global, a),
        args::Command::Extract(a) => cmd::extract::run(&cli.global, a),
        args::Command::Check(a) => cmd::check::run(&cli.global, a),
        args::Command::Scan(a) => cmd::scan::run(&cli.global, a),
        args::Command::Gpus(a) => cmd::gpus::run(&cli.global, a),
        args::Command::Devices(a) => cmd::devices::run(&cli.global, a),
        args::Command::Strip(a) => cmd::slim::strip(&cli.global, a),
        args::Command::Compress(a) => cmd::slim::compress(&cli.global, a),
        args::Command::Decompress(a) => cmd::slim::decompress(&cli.global, a),
        args::Command::Verify(a) => cmd::verify::run(&cli.global, a),
        args::Command::Plan(a) => cmd::plan::run(&cli.global, a),
        args::Command::Completions(a) => cmd::docs::completions(a),
        args::Command::Man(a) => cmd::docs::man(a),
    };
    match result {
        Ok(code) => code.into(),
        // `rocpack list | head` closes the pipe early: that is not an error.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            output::error(&err);
            output::Exit::Error.into()
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                == Some(std::io::ErrorKind::BrokenPipe)
    })
}
