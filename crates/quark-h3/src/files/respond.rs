//! One request of the file server over HTTP/3: the answer `decide` makes,
//! sent on the request stream.

use std::path::Path;

use http::Request;
use quark::hq::FILE_PIECE;

use super::FileBody;
use super::decide::decide;
use super::{FileOptions, ServeError};
use crate::RequestStream;

pub(crate) async fn serve_request(
    req: Request<()>,
    stream: &mut RequestStream,
    root: &Path,
    options: &FileOptions,
) -> Result<(), ServeError> {
    let mut answer = decide(&req, root, options).await?;
    stream.send_response(&answer.head).await?;
    if let Some(file) = &mut answer.body {
        send_file(file, stream).await?;
    }
    stream.finish()?;
    Ok(())
}

/// Sends the rest of `file` in DATA frames, reading only what the stream
/// can take now: nothing is read ahead of the connection's room, and no
/// buffer is held while waiting for it.
async fn send_file(file: &mut FileBody, stream: &mut RequestStream) -> Result<(), ServeError> {
    while file.left() > 0 {
        let max = usize::try_from(file.left()).map_or(FILE_PIECE, |left| left.min(FILE_PIECE));
        let room = stream.writable(max).await?;
        let piece = file.read(room).await?;
        stream.send_data(piece).await?;
    }
    Ok(())
}
