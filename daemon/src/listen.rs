//! The accept loop: a bounded number of open connections (the excess answered 503 and closed,
//! not queued), a deadline on every request head (a client that sends half a header, or nothing,
//! is closed when it passes; it is also the idle keep-alive timeout), HTTP/1.1 through hyper, and
//! a graceful stop that lets every request in flight finish.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower_service::Service as _;

use axum::http::StatusCode;

use super::conn::Shared;
use super::error::{ApiError, RETRY_AFTER_SECONDS};

/// Descriptors kept for everything but connections (the listener, model files, the runtime,
/// standard streams, a refusal in progress).
pub(crate) const RESERVED_DESCRIPTORS: u64 = 64;

/// Refused connections being answered at once at most; more are closed unanswered.
const REFUSALS_MAX: usize = 64;

/// A refused connection is read (and discarded) for at most this long after its 503, so that
/// closing it with unread request bytes does not reset the connection before the client reads
/// the answer.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// A failed `accept` (out of descriptors, typically) is retried after this.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Connections the kernel completes and holds for `accept` at most (the listen backlog): a
/// burst of new connections larger than this waits on the client's SYN retransmission.
const BACKLOG: u32 = 1024;

/// Listens on the first address `host` resolves to that can be bound, with [`BACKLOG`].
///
/// # Errors
/// The name does not resolve, or no address of it can be bound (the last error).
pub(crate) async fn bind(host: &str, port: u16) -> std::io::Result<TcpListener> {
    let mut last = None;
    for address in tokio::net::lookup_host((host, port)).await? {
        let socket =
            if address.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
        // A restarted server binds while the previous one's connections are in TIME_WAIT.
        socket.set_reuseaddr(true)?;
        match socket.bind(address).and_then(|()| socket.listen(BACKLOG)) {
            Ok(listener) => return Ok(listener),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "the host resolves to no address")))
}

/// The connection settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// Open connections at most.
    pub connections_max: usize,
    /// A request head must arrive within this (from the connection's start, or the end of its
    /// previous response).
    pub header_timeout: Duration,
}

/// The answer to a connection over the limit.
/// The answer to a connection over the limit: written before hyper (or axum) sees the
/// connection, so the head is written here; the body is the server's usual error object.
fn refusal(connections_max: usize) -> Vec<u8> {
    let error = ApiError::server(
        StatusCode::SERVICE_UNAVAILABLE,
        "too_many_connections",
        format!("the server has {connections_max} connections open (--max-connections): retry later"),
    );
    let body = error.body().to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: {RETRY_AFTER_SECONDS}\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves `app` on `listener` until `stop` resolves, then waits for every open connection to
/// finish its request in flight (idle ones close at once).
pub(crate) async fn serve(listener: TcpListener, app: Router, settings: Settings, stop: impl Future<Output = ()>) {
    let open = Arc::new(Semaphore::new(settings.connections_max));
    let refusing = Arc::new(Semaphore::new(REFUSALS_MAX));
    let refused = Arc::new(refusal(settings.connections_max));
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(settings.header_timeout).keep_alive(true);
    tokio::pin!(stop);
    loop {
        let (stream, _) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_failed(&error);
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
            refuse(stream, &refusing, &refused);
            continue;
        };
        // Server-sent events are many small writes: send each at once.
        let _ = stream.set_nodelay(true);
        let shared = Shared::new(stream);
        let peer = shared.peer();
        let app = app.clone();
        let handler = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(peer.clone());
            let mut app = app.clone();
            async move { app.call(request.map(Body::new)).await }
        });
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(shared), handler));
        tokio::spawn(async move {
            // A connection's end (the client went, a header timed out, a malformed request) is
            // that connection's business only.
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Answers a connection over the limit with a 503 and closes it, without holding up the loop.
fn refuse(stream: TcpStream, refusing: &Arc<Semaphore>, answer: &Arc<Vec<u8>>) {
    let Ok(slot) = Arc::clone(refusing).try_acquire_owned() else {
        // Too many refusals at once: close unanswered.
        return;
    };
    let answer = Arc::clone(answer);
    tokio::spawn(linger(stream, answer, slot));
}

/// Writes the 503 and ends the sending side, then reads and discards what the client sends
/// for at most [`REFUSAL_LINGER`] (or until it closes) before closing.
async fn linger(mut stream: TcpStream, answer: Arc<Vec<u8>>, _slot: OwnedSemaphorePermit) {
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        let mut written = 0;
        while written < answer.len() {
            if stream.writable().await.is_err() {
                return;
            }
            match stream.try_write(&answer[written..]) {
                Ok(n) => written += n,
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
        // The client sees the answer end at once; its request is drained meanwhile.
        let shutdown =
            std::future::poll_fn(|cx| tokio::io::AsyncWrite::poll_shutdown(std::pin::Pin::new(&mut stream), cx));
        if shutdown.await.is_err() {
            return;
        }
        let mut sink = [0u8; 1024];
        loop {
            if stream.readable().await.is_err() {
                return;
            }
            match stream.try_read(&mut sink) {
                Ok(0) => return,
                Ok(_) => {}
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
    })
    .await;
}

/// Reports a failed `accept` once per kind of error in a row, so a flood does not flood stderr.
fn accept_failed(error: &std::io::Error) {
    static LAST: std::sync::Mutex<Option<std::io::ErrorKind>> = std::sync::Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if *last != Some(error.kind()) {
        eprintln!("warning: accepting a connection failed: {error} (retrying every {ACCEPT_BACKOFF:?})");
        *last = Some(error.kind());
    }
}

/// Raises the soft limit on open descriptors towards the hard one so that `connections_max`
/// connections fit, and returns the connections that fit (fewer than asked when the hard limit
/// is lower, with a warning).
pub(crate) fn fit_descriptors(connections_max: usize) -> usize {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let wanted = u64::try_from(connections_max).unwrap_or(u64::MAX).saturating_add(RESERVED_DESCRIPTORS);
    let limit = getrlimit(Resource::Nofile);
    let current = limit.current.unwrap_or(u64::MAX);
    if current >= wanted {
        return connections_max;
    }
    let raised = limit.maximum.map_or(wanted, |maximum| maximum.min(wanted));
    let fits = if raised > current
        && setrlimit(Resource::Nofile, rustix::process::Rlimit { current: Some(raised), maximum: limit.maximum })
            .is_ok()
    {
        raised
    } else {
        current
    };
    let connections = usize::try_from(fits.saturating_sub(RESERVED_DESCRIPTORS)).unwrap_or(usize::MAX).max(1);
    if connections < connections_max {
        eprintln!(
            "warning: --max-connections {connections_max} needs {wanted} open descriptors; the limit is {fits}              (ulimit -n): serving at most {connections} connections"
        );
    }
    connections.min(connections_max)
}
