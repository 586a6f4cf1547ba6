//! Test support: a client and server `TlsSession` pair with a throwaway certificate,
//! and a loop that carries handshake bytes between them level by level.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig, SupportedCipherSuite};

use super::one_rtt::OneRttKeys;
use super::tls::TlsSession;
use super::{KeyChange, Keys, Secrets};
use crate::cid::ConnectionId;
use crate::error::TransportError;
use crate::packet::{
    HeaderParams, PacketBuilder, PartialDecode, VERSION_1, decrypt_payload,
    remove_header_protection,
};
use crate::types::PacketKind;

/// The three TLS 1.3 cipher suites QUIC uses.
pub(crate) fn suites() -> [SupportedCipherSuite; 3] {
    use rustls::crypto::ring::cipher_suite::*;
    [
        TLS13_AES_128_GCM_SHA256,
        TLS13_AES_256_GCM_SHA384,
        TLS13_CHACHA20_POLY1305_SHA256,
    ]
}

/// Client and server configurations limited to `suite`, TLS 1.3, and the given ALPN.
pub(crate) fn configs(
    suite: SupportedCipherSuite,
    client_alpn: &[u8],
    server_alpn: &[u8],
) -> (Arc<ClientConfig>, Arc<ServerConfig>) {
    let provider = Arc::new(CryptoProvider {
        cipher_suites: vec![suite],
        ..rustls::crypto::ring::default_provider()
    });
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));

    let mut server = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    server.alpn_protocols = vec![server_alpn.to_vec()];

    let mut roots = RootCertStore::empty();
    roots.add(cert).unwrap();
    let mut client = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![client_alpn.to_vec()];
    (Arc::new(client), Arc::new(server))
}

/// Encryption levels of handshake data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    Initial,
    Handshake,
    OneRtt,
}

/// One side of the pair and the keys TLS has handed it.
pub(crate) struct Peer {
    pub(crate) tls: TlsSession,
    pub(crate) level: Level,
    pub(crate) handshake: Option<Keys>,
    pub(crate) one_rtt: Option<(Keys, Secrets)>,
    /// Levels at which handshake bytes were sent, in order.
    pub(crate) sent_levels: Vec<Level>,
}

impl Peer {
    pub(crate) fn new(tls: TlsSession) -> Self {
        Peer {
            tls,
            level: Level::Initial,
            handshake: None,
            one_rtt: None,
            sent_levels: Vec::new(),
        }
    }

    /// Everything TLS wants to send now, as (level, bytes) chunks.
    pub(crate) fn pump(&mut self) -> Vec<(Level, Vec<u8>)> {
        let mut out = Vec::new();
        loop {
            let mut buf = Vec::new();
            let change = self.tls.write_handshake(&mut buf);
            let wrote = !buf.is_empty();
            if wrote {
                self.sent_levels.push(self.level);
                out.push((self.level, buf));
            }
            match change {
                Some(KeyChange::Handshake { keys }) => {
                    assert_eq!(self.level, Level::Initial);
                    self.handshake = Some(keys);
                    self.level = Level::Handshake;
                }
                Some(KeyChange::OneRtt { keys, next }) => {
                    assert_eq!(self.level, Level::Handshake);
                    self.one_rtt = Some((keys, next));
                    self.level = Level::OneRtt;
                }
                None if !wrote => return out,
                None => {}
            }
        }
    }
}

/// Carry handshake bytes both ways until neither side has anything to say.
pub(crate) fn drive(client: &mut Peer, server: &mut Peer) -> Result<(), TransportError> {
    for _ in 0..16 {
        let to_server = client.pump();
        for (_, data) in &to_server {
            server.tls.read_handshake(data)?;
        }
        let to_client = server.pump();
        for (_, data) in &to_client {
            client.tls.read_handshake(data)?;
        }
        if to_server.is_empty() && to_client.is_empty() {
            return Ok(());
        }
    }
    panic!("handshake did not settle");
}

/// Protect a 1-RTT packet with `local` keys and open it with `remote` keys: both must
/// be the two ends of one direction.
pub(crate) fn assert_same_direction(local: &Keys, remote: &Keys) {
    let dst = ConnectionId::new(&[5; 8]).unwrap();
    let h = HeaderParams {
        kind: PacketKind::OneRtt,
        version: VERSION_1,
        dst_cid: &dst,
        src_cid: &ConnectionId::EMPTY,
        token: &[],
        pn: 77,
        largest_acked: None,
        key_phase: false,
        spin: true,
    };
    let mut buf = Vec::new();
    let b = PacketBuilder::start(&mut buf, &h, 1200, local.local.packet.tag_len());
    buf.extend_from_slice(b"hello over QUIC");
    b.finish(
        &mut buf,
        0,
        local.local.packet.as_ref(),
        local.local.header.as_ref(),
    );
    let pd = PartialDecode::new(&buf, 8).unwrap();
    let u =
        remove_header_protection(&mut buf, &pd, remote.remote.header.as_ref(), Some(76)).unwrap();
    assert_eq!(u.pn, 77);
    let r = decrypt_payload(&mut buf, &u, remote.remote.packet.as_ref()).unwrap();
    assert_eq!(&buf[r], b"hello over QUIC");
}

/// A completed handshake with raw (opaque) transport parameters; returns both sides.
pub(crate) fn handshake(suite: SupportedCipherSuite) -> (Peer, Peer) {
    let (cc, sc) = configs(suite, b"hq-interop", b"hq-interop");
    let mut client =
        Peer::new(TlsSession::client_raw(cc, "localhost", b"client params".to_vec()).unwrap());
    let mut server = Peer::new(TlsSession::server_raw(sc, b"server params".to_vec()).unwrap());
    drive(&mut client, &mut server).unwrap();
    (client, server)
}

/// A sealed 1-RTT packet: (pn, key phase bit, header, payload + tag).
pub(crate) struct Sealed(pub u64, pub bool, pub Vec<u8>, pub Vec<u8>);

/// A packet carrying `pn` sealed with `from`'s current send key (no header
/// protection).
pub(crate) fn seal(from: &mut OneRttKeys, pn: u64) -> Sealed {
    let header = vec![0x40 | (u8::from(from.key_phase()) << 2), pn as u8];
    let mut payload = pn.to_be_bytes().to_vec();
    let tag = from
        .local_packet()
        .encrypt_in_place(pn, &header, &mut payload)
        .unwrap();
    payload.extend_from_slice(tag.as_ref());
    from.on_packet_sent(pn);
    Sealed(pn, from.key_phase(), header, payload)
}
