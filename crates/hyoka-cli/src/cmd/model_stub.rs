//! `hyoka model-stub serve`: the scripted model server on a loopback (or given) address,
//! until SIGINT or SIGTERM.

use std::io::Read as _;

use hyoka_model_stub::{Script, Stub};
use tokio::signal::unix::{SignalKind, signal};

use crate::args::ModelStubServeArgs;
use crate::exit::{ExitStatus, Fail};
use crate::out::outln;

/// The largest script read.
const MAX_SCRIPT: u64 = 16 * 1024 * 1024;

pub(crate) async fn serve(args: &ModelStubServeArgs) -> Result<ExitStatus, Fail> {
    let path = &args.script;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_SCRIPT + 1).read_to_string(&mut text))
        .map_err(|e| Fail::usage(format!("cannot read the script {}: {e}", path.display())))?;
    if text.len() as u64 > MAX_SCRIPT {
        return Err(Fail::usage(format!(
            "the script {} is larger than {} MiB",
            path.display(),
            MAX_SCRIPT >> 20
        )));
    }
    let script =
        Script::from_yaml(&text).map_err(|e| Fail::usage(format!("{}: {e}", path.display())))?;
    let stub = match &args.log {
        Some(log) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .map_err(|e| Fail::usage(format!("cannot open the log {}: {e}", log.display())))?;
            Stub::with_log(script, Box::new(file))
        }
        None => Stub::new(script),
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| Fail::usage(format!("cannot listen on {}: {e}", args.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Fail::failure(format!("cannot read the listening address: {e}")))?;
    let mut interrupt = signal(SignalKind::interrupt())
        .map_err(|e| Fail::failure(format!("cannot handle SIGINT: {e}")))?;
    let mut terminate = signal(SignalKind::terminate())
        .map_err(|e| Fail::failure(format!("cannot handle SIGTERM: {e}")))?;
    // The first line on stdout is the base URL: a test or a wrapper reads it to learn the port.
    outln!("http://{addr}");
    stub.serve(listener, async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
    .await
    .map_err(|e| Fail::failure(e.to_string()))?;
    Ok(ExitStatus::Success)
}
