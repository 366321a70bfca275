//! One accepted connection, shared between hyper (which reads and writes it) and the request
//! handlers (which only watch whether the client has gone).
//!
//! hyper notices a client that closes its connection while a response is pending only on a
//! keep-alive connection: after a `Connection: close` request it stops reading the socket, so a
//! handler waiting for a whole (non-streamed) generation would never learn that nobody waits
//! for it. [`Peer::gone`] watches the socket's read side for the end of stream or a reset
//! without reading from it, so hyper's reads are undisturbed.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// How often [`Peer::gone`] looks again while unread bytes are waiting (a pipelined request or
/// stray bytes after a `Connection: close` request), which make the socket readable without
/// closing it.
const PENDING_BYTES_POLL: Duration = Duration::from_millis(200);

/// A connection as hyper's I/O: reads and writes through `&TcpStream` (readiness, then a
/// non-blocking attempt), so that a [`Peer`] can hold the same stream.
#[derive(Debug, Clone)]
pub(crate) struct Shared(Arc<TcpStream>);

impl Shared {
    pub(crate) fn new(stream: TcpStream) -> Self {
        Self(Arc::new(stream))
    }

    /// The watcher handlers get for this connection.
    pub(crate) fn peer(&self) -> Peer {
        Peer(Arc::clone(&self.0))
    }
}

impl AsyncRead for Shared {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            ready!(self.0.poll_read_ready(cx))?;
            match self.0.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                // The readiness was stale: `try_read` cleared it, so the next poll waits.
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
    }
}

impl AsyncWrite for Shared {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write(data) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                result => return Poll::Ready(result),
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write_vectored(bufs) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                result => return Poll::Ready(result),
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Writes go straight to the socket.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The socket closes when the last holder (hyper's connection, or a handler's `Peer`)
        // drops it; every response is framed (length or chunked) or ends the connection, so no
        // half-close is needed to end one.
        Poll::Ready(Ok(()))
    }
}

/// Tells a handler whether its client has gone: a request extension on every request.
#[derive(Debug, Clone)]
pub(crate) struct Peer(Arc<TcpStream>);

impl Peer {
    /// Resolves once the client has closed its side of the connection or reset it.
    pub(crate) async fn gone(&self) {
        loop {
            match self.0.ready(Interest::READABLE).await {
                // The end-of-stream and hang-up bits stay set once seen.
                Ok(ready) if ready.is_read_closed() || ready.is_error() => return,
                Ok(_) => tokio::time::sleep(PENDING_BYTES_POLL).await,
                Err(_) => return,
            }
        }
    }
}

/// The status counted for a request whose client went away before its answer (nginx's
/// "client closed request"); nobody receives it.
pub(crate) const CLIENT_CLOSED_REQUEST: u16 = 499;

/// The middleware: a handler whose client goes away before the handler answers is dropped,
/// and with it the receiver of its generation's events, which stops the generation at its
/// next token (or skips it while it is queued). A streamed answer is already on its way when
/// the handler returns; hyper drops its body when a write to a gone client fails.
///
/// A client that half-closes (shuts down its sending side) while it waits counts as gone, as
/// in other HTTP servers that cancel on a client's end of stream.
pub(crate) async fn cancel_when_gone(request: Request, next: Next) -> Response {
    let Some(peer) = request.extensions().get::<Peer>().cloned() else {
        return next.run(request).await;
    };
    tokio::select! {
        response = next.run(request) => response,
        () = peer.gone() => StatusCode::from_u16(CLIENT_CLOSED_REQUEST)
            .map_or_else(|_| StatusCode::BAD_REQUEST.into_response(), IntoResponse::into_response),
    }
}
