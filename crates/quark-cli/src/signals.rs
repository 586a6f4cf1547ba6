//! Ending on SIGTERM / SIGINT for commands that have no shutdown of their own.
//!
//! In a container `quark agent` is often PID 1, and the kernel gives PID 1
//! no default action for signals it does not handle:
//! `podman stop` would wait out its grace period and then kill. Children
//! (lab servers and clients) read their stdin and exit when it closes.

use tokio::signal::unix::{SignalKind, signal};

/// Exits the process with 128 + the signal's number (the shell's convention)
/// on the first SIGTERM or SIGINT, from a thread of its own.
pub(crate) fn exit_on_termination() {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
    else {
        return;
    };
    // Registered before returning, so a signal sent right after start is seen.
    let handlers = runtime.block_on(async {
        Some((
            signal(SignalKind::terminate()).ok()?,
            signal(SignalKind::interrupt()).ok()?,
        ))
    });
    let Some((mut term, mut int)) = handlers else {
        return;
    };
    std::thread::spawn(move || {
        let code = runtime.block_on(async {
            tokio::select! {
                _ = term.recv() => 143,
                _ = int.recv() => 130,
            }
        });
        std::process::exit(code);
    });
}
