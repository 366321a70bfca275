//! SIGINT and SIGTERM: the server stops accepting, answers every request it has (in flight and
//! queued), then exits 0.

use tokio::signal::unix::{SignalKind, signal};

/// Resolves on the first SIGINT or SIGTERM.
///
/// # Errors
/// The signal handlers could not be installed.
pub(crate) fn install() -> std::io::Result<impl Future<Output = ()>> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        let name = tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        eprintln!("{name}: not accepting new connections; finishing the requests in flight and queued");
    })
}
