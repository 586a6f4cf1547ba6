//! The TLS 1.3 handshake for QUIC: a thin, typed wrapper over `rustls::quic`.
//!
//! ALPN protocols, certificates and cipher suites all come from the rustls
//! configuration; rustls itself enforces QUIC's strict ALPN rule (RFC 9001 §8.1) and
//! the presence of the transport parameters extension (§8.2).

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use rustls::pki_types::ServerName;
use rustls::quic::{self, Connection};

use crate::crypto::relabel::{self, Capture};
use crate::crypto::reserve::Reserve;
use crate::crypto::tickets::TicketSkipper;
use crate::crypto::{KeyChange, LevelKeys};
use crate::error::{TransportError, TransportErrorCode};
use crate::packet::rustls_version;
use crate::transport_params::TransportParameters;
use crate::types::Side;

/// One endpoint's TLS session.
pub struct TlsSession {
    /// `None` once [`TlsSession::shed`]: a closed connection needs no TLS.
    /// Boxed: rustls' state is 1.5 KB, which an established server
    /// connection would otherwise keep in place after shedding it.
    conn: Option<Box<Connection>>,
    /// What the getters report once `conn` is gone.
    kept: Kept,
    /// Output collected from rustls after each input, in order. rustls reports a key
    /// change together with bytes queued *after* it when several inputs arrive before
    /// it is asked for output (e.g. ServerHello and the server's Handshake flight in
    /// one datagram: the client's Finished would come back with the Handshake key
    /// change, looking like Initial data). Draining after every input keeps each
    /// byte at its level.
    pending: VecDeque<Step>,
    /// The peer's parameters, decoded on first request. Boxed and dropped
    /// by `shed_after_handshake` (the connection keeps its own copy): 340
    /// bytes an idle connection need not carry twice.
    peer_params: OnceLock<Box<Result<TransportParameters, TransportError>>>,
    /// The traffic secrets, from the key log: for an idle connection's
    /// keys ([`Reserve`]) and a client moving to another version (RFC 9368).
    relabel: Option<Box<Captured>>,
}

/// Traffic secrets captured from rustls' key log, and the labels they take.
struct Captured {
    capture: Arc<Capture>,
    /// The version whose labels the keys use.
    version: u32,
    /// A client made with [`TlsSession::client_upgradable`].
    upgradable: bool,
    /// [`TlsSession::switch_version`] was called: keys come from here.
    switched: bool,
}

/// The negotiated results kept when the session itself goes.
#[derive(Default)]
struct Kept {
    alpn: Option<Vec<u8>>,
    server_name: Option<String>,
    cipher: Option<rustls::SupportedCipherSuite>,
    /// Kept when the session goes at the end of the handshake (a server
    /// that authenticates clients), not when the connection closes.
    peer_certificates: Option<Vec<rustls::pki_types::CertificateDer<'static>>>,
    /// The session went at the end of the handshake: the connection lives on.
    after_handshake: bool,
    /// The handshake resumed a session (a ticket was accepted).
    resumed: bool,
    /// A client that shed its session: later tickets are skipped.
    tickets: TicketSkipper,
}

/// One piece of rustls' output.
enum Step {
    /// Handshake bytes for the current write level.
    Data(Vec<u8>),
    /// Keys for the next level; later bytes use them.
    Keys(Box<KeyChange>),
}

/// The ALPN protocol of the connection could not be agreed, the name is invalid,
/// or rustls refused the configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// rustls rejected the configuration or server name.
    #[error("TLS setup: {0}")]
    Config(String),
}

impl TlsSession {
    /// A client session. `config` must allow TLS 1.3 only and carry the ALPN list.
    pub fn client(
        config: Arc<rustls::ClientConfig>,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Self, TlsSetupError> {
        Self::client_for(crate::packet::VERSION_1, config, server_name, params)
    }

    /// [`Self::client`] for QUIC `version`: its HKDF labels for the
    /// handshake and 1-RTT keys and for key updates (RFC 9369 §3.3.2).
    pub fn client_for(
        version: u32,
        config: Arc<rustls::ClientConfig>,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Self, TlsSetupError> {
        let mut encoded = Vec::new();
        params.encode(&mut encoded);
        Self::client_versioned(version, config, server_name, encoded)
    }

    /// A server session.
    pub fn server(
        config: Arc<rustls::ServerConfig>,
        params: &TransportParameters,
    ) -> Result<Self, TlsSetupError> {
        Self::server_for(crate::packet::VERSION_1, config, params)
    }

    /// [`Self::server`] for QUIC `version`.
    pub fn server_for(
        version: u32,
        config: Arc<rustls::ServerConfig>,
        params: &TransportParameters,
    ) -> Result<Self, TlsSetupError> {
        let mut encoded = Vec::new();
        params.encode(&mut encoded);
        Self::server_versioned(version, config, encoded)
    }

    /// [`Self::client_for`], for a client that offers to move to another
    /// version mid-handshake (RFC 9368 compatible negotiation): it keeps its
    /// traffic secrets (through the key log, still fed to `config`'s own) so
    /// that [`Self::switch_version`] can give keys of the new version.
    pub fn client_upgradable(
        version: u32,
        config: Arc<rustls::ClientConfig>,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Self, TlsSetupError> {
        let mut session = Self::client_for(version, config, server_name, params)?;
        if let Some(r) = session.relabel.as_mut() {
            r.upgradable = true;
        }
        Ok(session)
    }

    /// Whether [`Self::switch_version`] can work (a session made with
    /// [`Self::client_upgradable`]).
    pub fn can_switch_version(&self) -> bool {
        self.relabel.as_ref().is_some_and(|r| r.upgradable)
    }

    /// From now on hand out keys with `version`'s labels. False for a session
    /// not made with [`Self::client_upgradable`].
    pub fn switch_version(&mut self, version: u32) -> bool {
        match self.relabel.as_mut() {
            Some(r) if r.upgradable => {
                r.version = version;
                r.switched = true;
                true
            }
            _ => false,
        }
    }

    /// A client session sending already-encoded transport parameters.
    #[cfg(test)]
    pub(crate) fn client_raw(
        config: Arc<rustls::ClientConfig>,
        server_name: &str,
        params: Vec<u8>,
    ) -> Result<Self, TlsSetupError> {
        Self::client_versioned(crate::packet::VERSION_1, config, server_name, params)
    }

    fn client_versioned(
        version: u32,
        config: Arc<rustls::ClientConfig>,
        server_name: &str,
        params: Vec<u8>,
    ) -> Result<Self, TlsSetupError> {
        let name = ServerName::try_from(server_name.to_owned())
            .map_err(|e| TlsSetupError::Config(format!("server name {server_name:?}: {e}")))?;
        // The config's own key log still gets every line (`Capture`).
        let mut config = (*config).clone();
        let capture = Arc::new(Capture::new(config.key_log.clone()));
        config.key_log = capture.clone();
        let conn =
            quic::ClientConnection::new(Arc::new(config), rustls_version(version), name, params)
                .map_err(|e| TlsSetupError::Config(e.to_string()))?;
        Ok(Self::wrap(conn.into()).capturing(capture, version))
    }

    /// A server session sending already-encoded transport parameters.
    #[cfg(test)]
    pub(crate) fn server_raw(
        config: Arc<rustls::ServerConfig>,
        params: Vec<u8>,
    ) -> Result<Self, TlsSetupError> {
        Self::server_versioned(crate::packet::VERSION_1, config, params)
    }

    fn server_versioned(
        version: u32,
        config: Arc<rustls::ServerConfig>,
        params: Vec<u8>,
    ) -> Result<Self, TlsSetupError> {
        let mut config = (*config).clone();
        let capture = Arc::new(Capture::new(config.key_log.clone()));
        config.key_log = capture.clone();
        let conn = quic::ServerConnection::new(Arc::new(config), rustls_version(version), params)
            .map_err(|e| TlsSetupError::Config(e.to_string()))?;
        Ok(Self::wrap(conn.into()).capturing(capture, version))
    }

    fn capturing(mut self, capture: Arc<Capture>, version: u32) -> Self {
        self.relabel = Some(Box::new(Captured {
            capture,
            version,
            upgradable: false,
            switched: false,
        }));
        self
    }

    /// The secrets behind the first 1-RTT keys, so that an idle connection
    /// can give the keys back and derive them again (`None` without them).
    pub fn one_rtt_reserve(&self, our_side: Side) -> Option<Reserve> {
        let r = self.relabel.as_ref()?;
        let suite = self.cipher_suite()?.suite();
        Reserve::from_capture(&r.capture, suite, r.version, our_side)
    }

    fn wrap(conn: Connection) -> Self {
        let mut session = TlsSession {
            conn: Some(Box::new(conn)),
            kept: Kept::default(),
            pending: VecDeque::new(),
            peer_params: OnceLock::new(),
            relabel: None,
        };
        session.drain();
        session
    }

    /// Move everything rustls has to say into `pending`.
    fn drain(&mut self) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        loop {
            let mut data = Vec::new();
            let change = conn.write_hs(&mut data);
            let wrote = !data.is_empty();
            if wrote {
                self.pending.push_back(Step::Data(data));
            }
            match change {
                Some(keys) => self.pending.push_back(Step::Keys(Box::new(keys))),
                None if !wrote => return,
                None => {}
            }
        }
    }

    /// Feed handshake bytes received in CRYPTO frames (in order). TLS failures map to
    /// CRYPTO_ERROR (0x100 + alert), RFC 9001 §4.8.
    pub fn read_handshake(&mut self, data: &[u8]) -> Result<(), TransportError> {
        let Some(conn) = self.conn.as_mut() else {
            //= https://www.rfc-editor.org/rfc/rfc9001#section-6
            //# Endpoints MUST NOT send a TLS KeyUpdate message.
            // Nor does anything else follow a server's handshake in QUIC.
            if self.kept.tickets.is_on() {
                return self.kept.tickets.skip(data);
            }
            if self.kept.after_handshake {
                return Err(TransportError::protocol_violation(
                    "TLS data after the handshake",
                ));
            }
            return Err(TransportError::new(
                TransportErrorCode::INTERNAL_ERROR,
                "handshake data after the connection closed",
            ));
        };
        conn.read_hs(data).map_err(|e| self.error(e))?;
        self.drain();
        Ok(())
    }

    //= https://www.rfc-editor.org/rfc/rfc9001#section-4.8
    //# If TLS experiences an error, it generates an appropriate alert as
    //# defined in Section 6 of [TLS13].
    //#
    //# A TLS alert is converted into a QUIC connection error.  The
    //# AlertDescription value is added to 0x0100 to produce a QUIC error
    //# code from the range reserved for CRYPTO_ERROR
    fn error(&self, e: rustls::Error) -> TransportError {
        let code = match self.conn.as_ref().and_then(|c| c.alert()) {
            Some(alert) => TransportErrorCode::crypto(u8::from(alert)),
            // Without an alert: a malformed or misplaced message is the peer's fault,
            // anything else (e.g. a failing certificate verifier) ours.
            None => match e {
                rustls::Error::InvalidMessage(_)
                | rustls::Error::InappropriateMessage { .. }
                | rustls::Error::InappropriateHandshakeMessage { .. }
                | rustls::Error::PeerMisbehaved(_) => TransportErrorCode::PROTOCOL_VIOLATION,
                _ => TransportErrorCode::INTERNAL_ERROR,
            },
        };
        TransportError::new(code, e.to_string())
    }

    /// [`Self::write_handshake`], with the keys in the version set by
    /// [`Self::switch_version`] if any. A change whose keys cannot be made is
    /// an INTERNAL_ERROR.
    pub fn write_handshake_keys(
        &mut self,
        buf: &mut Vec<u8>,
    ) -> Result<Option<LevelKeys>, TransportError> {
        let Some(change) = self.write_handshake(buf) else {
            return Ok(None);
        };
        let target = self
            .relabel
            .as_ref()
            .filter(|r| r.switched)
            .map(|r| (r.capture.clone(), r.version));
        let Some((capture, version)) = target else {
            return Ok(Some(match change {
                KeyChange::Handshake { keys } => LevelKeys::Handshake(keys),
                KeyChange::OneRtt { keys, next } => LevelKeys::OneRtt(keys, next.into()),
            }));
        };
        let one_rtt = matches!(change, KeyChange::OneRtt { .. });
        let suite = self.cipher_suite().map(|s| s.suite());
        let made = suite.and_then(|suite| {
            relabel::keys(
                &capture,
                suite,
                version,
                crate::types::Side::Client,
                one_rtt,
            )
        });
        let Some((keys, next)) = made else {
            return Err(TransportError::internal(
                "no traffic secrets to change versions",
            ));
        };
        Ok(Some(if one_rtt {
            LevelKeys::OneRtt(keys, crate::crypto::NextSecrets::Relabeled(next))
        } else {
            LevelKeys::Handshake(keys)
        }))
    }

    /// Collect handshake bytes to send at the current write level, and any new keys.
    /// Call repeatedly until it returns `None` and writes nothing.
    pub fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<KeyChange> {
        while let Some(step) = self.pending.pop_front() {
            match step {
                Step::Data(data) => buf.extend_from_slice(&data),
                Step::Keys(keys) => return Some(*keys),
            }
        }
        None
    }

    /// True once rustls' state is gone (the connection closed, or a server's
    /// handshake is over).
    pub fn is_shed(&self) -> bool {
        self.conn.is_none()
    }

    /// True until the handshake completes.
    pub fn is_handshaking(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| c.is_handshaking())
    }

    /// The peer's transport parameters, once received, decoded and validated
    /// (`Ok(None)` before they arrive).
    pub fn peer_params(
        &self,
        our_side: Side,
    ) -> Result<Option<TransportParameters>, TransportError> {
        let Some(conn) = &self.conn else {
            return self.peer_params.get().map(|p| (**p).clone()).transpose();
        };
        let Some(raw) = conn.quic_transport_parameters() else {
            return Ok(None);
        };
        // During a resumed handshake rustls reports the previous session's
        // parameters: never cache those.
        if conn.is_handshaking() {
            return TransportParameters::decode(our_side.peer(), raw).map(Some);
        }
        (**self
            .peer_params
            .get_or_init(|| Box::new(TransportParameters::decode(our_side.peer(), raw))))
        .clone()
        .map(Some)
    }

    /// 0-RTT packet keys (RFC 9001 §4.6.1): for a client resuming a session
    /// that allows early data, from the start; for a server, once it read a
    /// ClientHello whose early data it accepts. `None` otherwise.
    pub fn zero_rtt_keys(&self) -> Option<crate::crypto::DirectionalKeys> {
        self.conn.as_ref()?.zero_rtt_keys()
    }

    /// Client: whether the server accepted early data (meaningful once the
    /// handshake is complete).
    pub fn is_early_data_accepted(&self) -> bool {
        match self.conn.as_deref() {
            Some(Connection::Client(c)) => c.is_early_data_accepted(),
            _ => false,
        }
    }

    /// Server: refuse early data whatever the ticket allows. Call before the
    /// ClientHello is read.
    pub fn reject_early_data(&mut self) {
        if let Some(Connection::Server(c)) = self.conn.as_deref_mut() {
            c.reject_early_data();
        }
    }

    /// The peer's transport parameters as sent, before decoding.
    #[cfg(test)]
    pub(crate) fn peer_params_raw(&self) -> Option<&[u8]> {
        self.conn.as_ref()?.quic_transport_parameters()
    }

    /// The negotiated ALPN protocol.
    pub fn alpn(&self) -> Option<&[u8]> {
        match &self.conn {
            Some(conn) => conn.alpn_protocol(),
            None => self.kept.alpn.as_deref(),
        }
    }

    /// The server name the client asked for (server side).
    pub fn server_name(&self) -> Option<&str> {
        match self.conn.as_deref() {
            Some(Connection::Server(conn)) => conn.server_name(),
            Some(Connection::Client(_)) => None,
            None => self.kept.server_name.as_deref(),
        }
    }

    /// The peer's certificate chain, DER-encoded (`None` once the connection
    /// closed).
    pub fn peer_certificates(&self) -> Option<&[rustls::pki_types::CertificateDer<'static>]> {
        match &self.conn {
            Some(conn) => conn.peer_certificates(),
            None => self.kept.peer_certificates.as_deref(),
        }
    }

    /// The negotiated TLS cipher suite.
    pub fn cipher_suite(&self) -> Option<rustls::SupportedCipherSuite> {
        match &self.conn {
            Some(conn) => conn.negotiated_cipher_suite(),
            None => self.kept.cipher,
        }
    }

    /// Whether the handshake resumed a session from a ticket (either side).
    pub fn is_resumed(&self) -> bool {
        match &self.conn {
            Some(conn) => conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            None => self.kept.resumed,
        }
    }

    /// The connection closed: drop rustls's state (the handshake's buffers and
    /// transcript, the peer's certificates), keeping the negotiated ALPN, server
    /// name and cipher suite for the getters.
    pub fn shed(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        self.kept = Kept {
            peer_certificates: None,
            after_handshake: false,
            alpn: conn.alpn_protocol().map(<[u8]>::to_vec),
            server_name: match &*conn {
                Connection::Server(conn) => conn.server_name().map(str::to_owned),
                Connection::Client(_) => None,
            },
            cipher: conn.negotiated_cipher_suite(),
            resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            tickets: TicketSkipper::default(),
        };
        self.pending = VecDeque::new();
        // The secrets went into the 1-RTT keys' reserve, if at all.
        self.relabel = None;
    }

    /// A server's handshake is over and its output collected (tickets
    /// included), or a client's is confirmed and idle: nothing more passes
    /// through TLS (a client skips later tickets), so its state goes (about
    /// 5 KB per connection), keeping what the getters report. The peer's
    /// parameters are checked here and then forgotten: `peer_params` reports
    /// `Ok(None)` afterwards (the connection holds them). Returns whether it
    /// went (not while handshaking, nor with output still pending).
    pub fn shed_after_handshake(&mut self, our_side: Side) -> bool {
        if self.is_handshaking() || !self.pending.is_empty() || self.conn.is_none() {
            return false;
        }
        // Decode and keep the parameters while they can still be read.
        if self.peer_params(our_side).is_err() {
            return false;
        }
        let certs = self
            .conn
            .as_ref()
            .and_then(|c| c.peer_certificates())
            .map(<[_]>::to_vec);
        self.shed();
        self.peer_params.take();
        self.kept.peer_certificates = certs;
        self.kept.after_handshake = true;
        if our_side.is_client() {
            // Tickets may still come; their store is the client config's,
            // so a late one is only skipped (resumption uses the earlier).
            self.kept.tickets.start();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cid::{ConnectionId, ResetToken};
    use crate::crypto::test_pair::{
        Level, Peer, assert_same_direction, configs, drive, handshake, suites,
    };
    use rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;

    #[test]
    fn handshake_every_suite_and_keys_match() {
        for suite in suites() {
            let (client, server) = handshake(suite);
            assert!(!client.tls.is_handshaking() && !server.tls.is_handshaking());
            assert_eq!(client.tls.alpn(), Some(&b"hq-interop"[..]));
            assert_eq!(server.tls.alpn(), Some(&b"hq-interop"[..]));
            assert_eq!(client.tls.cipher_suite(), Some(suite));
            assert_eq!(server.tls.cipher_suite(), Some(suite));
            assert_eq!(server.tls.server_name(), Some("localhost"));
            assert_eq!(client.tls.server_name(), None);
            assert_eq!(client.tls.peer_certificates().map(<[_]>::len), Some(1));
            assert_eq!(client.tls.peer_params_raw(), Some(&b"server params"[..]));
            assert_eq!(server.tls.peer_params_raw(), Some(&b"client params"[..]));
            // ClientHello in Initial, Finished in Handshake; the server's flight in
            // Initial and Handshake (then possibly tickets in 1-RTT).
            assert_eq!(client.sent_levels, [Level::Initial, Level::Handshake]);
            assert_eq!(server.sent_levels[..2], [Level::Initial, Level::Handshake]);

            let (c, s) = (client.handshake.unwrap(), server.handshake.unwrap());
            assert_same_direction(&c, &s);
            assert_same_direction(&s, &c);
            let (c, s) = (client.one_rtt.unwrap().0, server.one_rtt.unwrap().0);
            assert_same_direction(&c, &s);
            assert_same_direction(&s, &c);
        }
    }

    #[test]
    fn alpn_mismatch_is_crypto_error_0x178() {
        let (cc, sc) = configs(TLS13_AES_128_GCM_SHA256, b"h3", b"hq-interop");
        let mut client = Peer::new(TlsSession::client_raw(cc, "localhost", vec![1]).unwrap());
        let mut server = Peer::new(TlsSession::server_raw(sc, vec![2]).unwrap());
        let err = drive(&mut client, &mut server).unwrap_err();
        //= https://www.rfc-editor.org/rfc/rfc9001#section-8.1
        //# the server MUST treat the inability to select a compatible
        //# application protocol as a connection error of type 0x0178
        //# (no_application_protocol).
        assert_eq!(err.code, TransportErrorCode(0x178));
    }

    #[test]
    fn garbage_is_a_crypto_error() {
        let (_, sc) = configs(TLS13_AES_128_GCM_SHA256, b"x", b"x");
        let mut server = TlsSession::server_raw(sc, vec![]).unwrap();
        // a "ClientHello" whose body is nonsense
        let err = server
            .read_handshake(&[0x01, 0x00, 0x00, 0x04, 0xde, 0xad, 0xbe, 0xef])
            .unwrap_err();
        assert!((0x100..=0x1ff).contains(&err.code.0), "{err}");
    }

    #[test]
    fn bad_server_name_is_a_setup_error() {
        let (cc, _) = configs(TLS13_AES_128_GCM_SHA256, b"x", b"x");
        assert!(TlsSession::client_raw(cc, "not a name!", vec![]).is_err());
    }

    #[test]

    fn transport_parameters_cross_the_handshake() {
        let (cc, sc) = configs(TLS13_AES_128_GCM_SHA256, b"hq-interop", b"hq-interop");
        let client_params = TransportParameters {
            initial_max_data: 123_456,
            initial_source_connection_id: ConnectionId::new(&[1; 8]),
            ..TransportParameters::default()
        };
        let server_params = TransportParameters {
            initial_max_streams_bidi: 7,
            original_destination_connection_id: ConnectionId::new(&[2; 8]),
            initial_source_connection_id: ConnectionId::new(&[3; 8]),
            stateless_reset_token: Some(ResetToken([4; 16])),
            ..TransportParameters::default()
        };
        let mut client = Peer::new(TlsSession::client(cc, "localhost", &client_params).unwrap());
        let mut server = Peer::new(TlsSession::server(sc, &server_params).unwrap());
        assert_eq!(client.tls.peer_params(Side::Client), Ok(None));
        drive(&mut client, &mut server).unwrap();
        assert_eq!(
            server.tls.peer_params(Side::Server),
            Ok(Some(client_params))
        );
        assert_eq!(
            client.tls.peer_params(Side::Client),
            Ok(Some(server_params.clone()))
        );

        // A client may not send server-only parameters.
        let (cc, sc) = configs(TLS13_AES_128_GCM_SHA256, b"hq-interop", b"hq-interop");
        let mut client = Peer::new(TlsSession::client(cc, "localhost", &server_params).unwrap());
        let mut server = Peer::new(TlsSession::server(sc, &server_params).unwrap());
        let _ = drive(&mut client, &mut server);
        let err = server.tls.peer_params(Side::Server).unwrap_err();
        assert_eq!(err.code, TransportErrorCode::TRANSPORT_PARAMETER_ERROR);
        // cached: the same answer again
        assert_eq!(server.tls.peer_params(Side::Server), Err(err));
    }

    /// A client sheds its session once the handshake is over: tickets that
    /// come later are skipped, anything else is still an error (RFC 9001 §6).
    #[test]
    fn a_client_skips_tickets_after_shedding() {
        let (cc, sc) = configs(TLS13_AES_128_GCM_SHA256, b"hq-interop", b"hq-interop");
        let client_params = TransportParameters {
            initial_source_connection_id: ConnectionId::new(&[1; 8]),
            ..TransportParameters::default()
        };
        let server_params = TransportParameters {
            original_destination_connection_id: ConnectionId::new(&[2; 8]),
            initial_source_connection_id: ConnectionId::new(&[3; 8]),
            ..TransportParameters::default()
        };
        let mut client = Peer::new(TlsSession::client(cc, "localhost", &client_params).unwrap());
        let mut server = Peer::new(TlsSession::server(sc, &server_params).unwrap());
        // The handshake, holding back what the server sends in 1-RTT.
        let mut tickets = Vec::new();
        for _ in 0..16 {
            let to_server = client.pump();
            for (_, data) in &to_server {
                server.tls.read_handshake(data).unwrap();
            }
            let to_client = server.pump();
            for (level, data) in &to_client {
                match level {
                    Level::OneRtt => tickets.extend_from_slice(data),
                    _ => client.tls.read_handshake(data).unwrap(),
                }
            }
            if to_server.is_empty() && to_client.is_empty() {
                break;
            }
        }
        assert!(!client.tls.is_handshaking());
        assert!(!tickets.is_empty(), "the server sent tickets");
        assert!(client.tls.shed_after_handshake(Side::Client));
        assert!(client.tls.is_shed());
        assert_eq!(client.tls.alpn(), Some(&b"hq-interop"[..]));
        assert_eq!(client.tls.peer_certificates().map(<[_]>::len), Some(1));
        let (a, b) = tickets.split_at(tickets.len() / 2 + 1);
        client.tls.read_handshake(a).unwrap();
        client.tls.read_handshake(b).unwrap();
        // KeyUpdate (type 24).
        let err = client.tls.read_handshake(&[24, 0, 0, 1, 0]).unwrap_err();
        assert_eq!(err.code, TransportErrorCode(0x10a));
    }
}
