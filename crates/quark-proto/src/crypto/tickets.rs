//! What a client reads after it dropped its TLS session: session tickets,
//! skipped (RFC 9001 §4.1.3: NewSessionTicket is the only TLS message a
//! server sends after the handshake; a client need not use it).

use crate::error::{TransportError, TransportErrorCode};

/// TLS handshake message type of NewSessionTicket (RFC 8446 §4).
const NEW_SESSION_TICKET: u8 = 4;
/// unexpected_message (RFC 8446 §6).
const UNEXPECTED_MESSAGE: u8 = 10;

/// Walks TLS handshake messages split anywhere across CRYPTO frames. Five
/// bytes, in what was padding of the TLS session's kept details: the
/// connection's inline size does not grow for it.
#[derive(Default, Debug)]
pub(crate) struct TicketSkipper {
    on: bool,
    /// Bytes of the current message's 4-byte header read; at 4, `len` is
    /// what is left of its body.
    have: u8,
    /// The 24-bit length, big-endian (RFC 8446 §4).
    len: [u8; 3],
}

impl TicketSkipper {
    /// From now on, TLS data is skipped ticket by ticket.
    pub(crate) fn start(&mut self) {
        self.on = true;
    }

    pub(crate) fn is_on(&self) -> bool {
        self.on
    }

    /// Skip `data`; any message but a ticket is the peer's error.
    pub(crate) fn skip(&mut self, mut data: &[u8]) -> Result<(), TransportError> {
        while !data.is_empty() {
            if self.have == 4 {
                let [a, b, c] = self.len;
                let remaining = u32::from_be_bytes([0, a, b, c]);
                let n = data.len().min(remaining as usize);
                data = &data[n..];
                let [_, a, b, c] = (remaining - n as u32).to_be_bytes();
                self.len = [a, b, c];
                if self.len == [0; 3] {
                    self.have = 0;
                }
                continue;
            }
            if self.have == 0 {
                //= https://www.rfc-editor.org/rfc/rfc9001#section-6
                //# Endpoints MUST treat the receipt of a TLS KeyUpdate message as a
                //# connection error of type 0x010a, equivalent to a fatal TLS alert
                //# of unexpected_message
                // So is anything but a ticket after the handshake.
                if data[0] != NEW_SESSION_TICKET {
                    return Err(TransportError::new(
                        TransportErrorCode::crypto(UNEXPECTED_MESSAGE),
                        "TLS message other than a ticket after the handshake",
                    ));
                }
            } else {
                self.len[self.have as usize - 1] = data[0];
            }
            self.have += 1;
            data = &data[1..];
            if self.have == 4 && self.len == [0; 3] {
                self.have = 0; // an empty body
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(len: usize) -> Vec<u8> {
        let mut m = vec![NEW_SESSION_TICKET, 0, (len >> 8) as u8, len as u8];
        m.extend(std::iter::repeat_n(0xab, len));
        m
    }

    #[test]
    fn tickets_split_anywhere_are_skipped() {
        let mut data = ticket(300);
        data.extend(ticket(0));
        data.extend(ticket(5));
        for split in 0..data.len() {
            let mut s = TicketSkipper::default();
            s.skip(&data[..split]).unwrap();
            s.skip(&data[split..]).unwrap();
            assert_eq!((s.have, s.len), (0, [0; 3]), "split at {split}");
        }
    }

    #[test]
    fn key_update_is_unexpected_message() {
        let mut s = TicketSkipper::default();
        s.skip(&ticket(10)).unwrap();
        // KeyUpdate (type 24).
        let err = s.skip(&[24, 0, 0, 1, 0]).unwrap_err();
        assert_eq!(err.code, TransportErrorCode(0x10a));
    }
}
