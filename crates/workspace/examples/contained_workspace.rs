//! Run a command in a contained workspace: create it from a starter, let the command work in
//! it, measure what it produced, and remove it — safely, whatever the command left there.
//!
//! `cargo run -p hyoka-workspace --example contained_workspace -- sh -c 'echo hi > out.txt'`

use std::path::Path;
use std::process::Command;

use hyoka_workspace::{KeepPolicy, RunId, RunVerdict, TempWorkspace, Workspace, WorkspaceOptions};

#[allow(clippy::print_stdout, reason = "an example shows its results")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let command_line: Vec<String> = std::env::args().skip(1).collect();
    let (program, args) = match command_line.split_first() {
        Some((program, args)) => (program.clone(), args.to_vec()),
        None => (
            "sh".to_owned(),
            vec![
                "-c".to_owned(),
                "mkdir -p src && echo 'fn main() {}' > src/main.rs".to_owned(),
            ],
        ),
    };
    let workspace = TempWorkspace::create(&WorkspaceOptions {
        root: std::env::temp_dir(),
        run_id: RunId::new("example")?,
        eval_id: None,
        keep: KeepPolicy::OnFailure,
        starter: None,
        inject: Vec::new(),
        instance: None,
        owner: None,
    })?;
    // Written after creation, this counts as output; instructions for an agent belong in
    // `WorkspaceOptions::inject`, which makes them part of the baseline.
    workspace.write_file(Path::new("NOTES.md"), b"scratch\n")?;
    println!("workspace: {}", workspace.path().display());

    let status = Command::new(&program)
        .args(&args)
        .current_dir(workspace.path())
        .status()?;
    let usage = workspace.usage()?;
    println!(
        "{program} exited with {status}; it created {} and changed {} files ({} bytes)",
        usage.created, usage.changed, usage.bytes
    );
    for entry in workspace.list(Path::new(""))? {
        println!(
            "  {:?} {} {} bytes",
            entry.kind,
            entry.name.display(),
            entry.len
        );
    }
    // Nothing outside can be reached through the workspace's paths.
    assert!(workspace.read_file(Path::new("../../etc/passwd")).is_err());

    let outcome = if status.success() {
        RunVerdict::Success
    } else {
        RunVerdict::Failure
    };
    println!("closed: {:?}", workspace.close(outcome)?);
    Ok(())
}
