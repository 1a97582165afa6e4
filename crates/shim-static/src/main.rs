//! `hyoka-shim-static`: the subreaper shim and nothing else, the program hyoka embeds.
//!
//! `hyoka-cli`'s build script builds this package for the host's musl target, statically
//! linked, and embeds the program; hyoka seals it in memory ([`hyoka_proctrack::ShimImage`])
//! and starts every agent, service and scorer process outside a sandbox through it. A static
//! musl program starts in a tenth of the CPU time a dynamically linked glibc one takes, and
//! hyoka starts two per trial. Built for the host, it is the same shim as `hyoka-shim`. The
//! protocol is [`hyoka_proctrack::shim_args`]'s; people never run it.
//!
//! ```sh
//! cargo build --release -p hyoka-shim-static --target x86_64-unknown-linux-musl
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    hyoka_proctrack::shim_main(std::env::args_os().skip(1))
}
