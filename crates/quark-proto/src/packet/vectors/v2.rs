//! RFC 9369 Appendix A: the QUIC v2 sample packets, byte for byte, both ways.
//! The plaintexts are RFC 9001's (the parent module's constants).

use super::*;
use crate::crypto::initial_keys_for;

//= https://www.rfc-editor.org/rfc/rfc9369#appendix-A.2
//# The resulting protected packet is:
const CLIENT_PROTECTED: &str = "
    d76b3343cf088394c8f03e5157080000 449ea0c95e82ffe67b6abcdb4298b485
    dd04de806071bf03dceebfa162e75d6c 96058bdbfb127cdfcbf903388e99ad04
    9f9a3dd4425ae4d0992cfff18ecf0fdb 5a842d09747052f17ac2053d21f57c5d
    250f2c4f0e0202b70785b7946e992e58 a59ac52dea6774d4f03b55545243cf1a
    12834e3f249a78d395e0d18f4d766004 f1a2674802a747eaa901c3f10cda5500
    cb9122faa9f1df66c392079a1b40f0de 1c6054196a11cbea40afb6ef5253cd68
    18f6625efce3b6def6ba7e4b37a40f77 32e093daa7d52190935b8da58976ff33
    12ae50b187c1433c0f028edcc4c2838b 6a9bfc226ca4b4530e7a4ccee1bfa2a3
    d396ae5a3fb512384b2fdd851f784a65 e03f2c4fbe11a53c7777c023462239dd
    6f7521a3f6c7d5dd3ec9b3f233773d4b 46d23cc375eb198c63301c21801f6520
    bcfb7966fc49b393f0061d974a2706df 8c4a9449f11d7f3d2dcbb90c6b877045
    636e7c0c0fe4eb0f697545460c806910 d2c355f1d253bc9d2452aaa549e27a1f
    ac7cf4ed77f322e8fa894b6a83810a34 b361901751a6f5eb65a0326e07de7c12
    16ccce2d0193f958bb3850a833f7ae43 2b65bc5a53975c155aa4bcb4f7b2c4e5
    4df16efaf6ddea94e2c50b4cd1dfe060 17e0e9d02900cffe1935e0491d77ffb4
    fdf85290fdd893d577b1131a610ef6a5 c32b2ee0293617a37cbb08b847741c3b
    8017c25ca9052ca1079d8b78aebd4787 6d330a30f6a8c6d61dd1ab5589329de7
    14d19d61370f8149748c72f132f0fc99 f34d766c6938597040d8f9e2bb522ff9
    9c63a344d6a2ae8aa8e51b7b90a4a806 105fcbca31506c446151adfeceb51b91
    abfe43960977c87471cf9ad4074d30e1 0d6a7f03c63bd5d4317f68ff325ba3bd
    80bf4dc8b52a0ba031758022eb025cdd 770b44d6d6cf0670f4e990b22347a7db
    848265e3e5eb72dfe8299ad7481a4083 22cac55786e52f633b2fb6b614eaed18
    d703dd84045a274ae8bfa73379661388 d6991fe39b0d93debb41700b41f90a15
    c4d526250235ddcd6776fc77bc97e7a4 17ebcb31600d01e57f32162a8560cacc
    7e27a096d37a1a86952ec71bd89a3e9a 30a2a26162984d7740f81193e8238e61
    f6b5b984d4d3dfa033c1bb7e4f0037fe bf406d91c0dccf32acf423cfa1e70710
    10d3f270121b493ce85054ef58bada42 310138fe081adb04e2bd901f2f13458b
    3d6758158197107c14ebb193230cd115 7380aa79cae1374a7c1e5bbcb80ee23e
    06ebfde206bfb0fcbc0edc4ebec30966 1bdd908d532eb0c6adc38b7ca7331dce
    8dfce39ab71e7c32d318d136b6100671 a1ae6a6600e3899f31f0eed19e3417d1
    34b90c9058f8632c798d4490da498730 7cba922d61c39805d072b589bd52fdf1
    e86215c2d54e6670e07383a27bbffb5a ddf47d66aa85a0c6f9f32e59d85a44dd
    5d3b22dc2be80919b490437ae4f36a0a e55edf1d0b5cb4e9a3ecabee93dfc6e3
    8d209d0fa6536d27a5d6fbb17641cde2 7525d61093f1b28072d111b2b4ae5f89
    d5974ee12e5cf7d5da4d6a31123041f3 3e61407e76cffcdcfd7e19ba58cf4b53
    6f4c4938ae79324dc402894b44faf8af bab35282ab659d13c93f70412e85cb19
    9a37ddec600545473cfb5a05e08d0b20 9973b2172b4d21fb69745a262ccde96b
    a18b2faa745b6fe189cf772a9f84cbfc";

//= https://www.rfc-editor.org/rfc/rfc9369#appendix-A.3
//# The final protected packet is then:
const SERVER_PROTECTED: &str = "
    dc6b3343cf0008f067a5502a4262b500 4075d92faaf16f05d8a4398c47089698
    baeea26b91eb761d9b89237bbf872630 17915358230035f7fd3945d88965cf17
    f9af6e16886c61bfc703106fbaf3cb4c fa52382dd16a393e42757507698075b2
    c984c707f0a0812d8cd5a6881eaf21ce da98f4bd23f6fe1a3e2c43edd9ce7ca8
    4bed8521e2e140";

//= https://www.rfc-editor.org/rfc/rfc9369#appendix-A.4
const RETRY: &str = "cf6b3343cf0008f067a5502a4262b5746f6b656ec8646ce8bfe33952d955543665dcc7b6";

fn header<'a>(
    kind: PacketKind,
    dst: &'a ConnectionId,
    src: &'a ConnectionId,
    pn: u64,
) -> HeaderParams<'a> {
    HeaderParams {
        kind,
        version: VERSION_2,
        dst_cid: dst,
        src_cid: src,
        token: &[],
        pn,
        largest_acked: None,
        key_phase: false,
        spin: false,
    }
}

#[test]
fn a2_client_initial_v2() {
    let client = initial_keys_for(VERSION_2, &hex(DCID), Side::Client);
    let dcid = cid(DCID);
    let h = header(PacketKind::Initial, &dcid, &ConnectionId::EMPTY, 2);
    let crypto = hex(CLIENT_CRYPTO);
    let packet = protect(
        &h,
        4,
        &crypto,
        MIN_INITIAL_SIZE,
        client.local.packet.as_ref(),
        client.local.header.as_ref(),
    );
    assert_eq!(hex::encode(&packet), hex::encode(hex(CLIENT_PROTECTED)));

    let server = initial_keys_for(VERSION_2, &hex(DCID), Side::Server);
    let (pd, h, plain) = unprotect(
        &packet,
        0,
        None,
        server.remote.packet.as_ref(),
        server.remote.header.as_ref(),
    );
    assert_eq!(pd.ty, HeaderType::Frames(PacketKind::Initial));
    assert_eq!(pd.version, VERSION_2);
    assert_eq!(h.pn, 2);
    let mut expected = crypto;
    expected.resize(1162, 0);
    assert_eq!(plain, expected);
    // v1 keys do not open a v2 Initial.
    let v1 = initial_keys(&hex(DCID), Side::Server);
    let mut copy = packet.clone();
    if let Ok(h) = remove_header_protection(&mut copy, &pd, v1.remote.header.as_ref(), None) {
        assert!(decrypt_payload(&mut copy, &h, v1.remote.packet.as_ref()).is_err());
    }
}

#[test]
fn a3_server_initial_v2() {
    let server = initial_keys_for(VERSION_2, &hex(DCID), Side::Server);
    let scid = cid("f067a5502a4262b5");
    let h = header(PacketKind::Initial, &ConnectionId::EMPTY, &scid, 1);
    let payload = hex(SERVER_PAYLOAD);
    let packet = protect(
        &h,
        2,
        &payload,
        0,
        server.local.packet.as_ref(),
        server.local.header.as_ref(),
    );
    assert_eq!(hex::encode(&packet), hex::encode(hex(SERVER_PROTECTED)));

    let client = initial_keys_for(VERSION_2, &hex(DCID), Side::Client);
    let (pd, h, plain) = unprotect(
        &packet,
        0,
        Some(0),
        client.remote.packet.as_ref(),
        client.remote.header.as_ref(),
    );
    assert_eq!(pd.src_cid, scid);
    assert_eq!(h.pn, 1);
    assert_eq!(plain, payload);
}

#[test]
fn a4_retry_v2() {
    let buf = check_retry(VERSION_2, RETRY);
    let odcid = cid(DCID);
    let pd = PartialDecode::new(&buf, 0).unwrap();
    assert_eq!((pd.ty, pd.version), (HeaderType::Retry, VERSION_2));
    assert_eq!(&buf[pd.token.clone()], b"token");
    // The v1 key does not authenticate it: the version is part of the check.
    let mut as_v1 = buf.clone();
    as_v1[1..5].copy_from_slice(&VERSION_1.to_be_bytes());
    assert!(!retry_integrity_ok(&odcid, &as_v1));
}

//= https://www.rfc-editor.org/rfc/rfc9369#appendix-A.5
//# key = 0x3bfcddd72bcf02541d7fa0dd1f5f9eeea817e09a6963a0e6c7df0f9a1bab90f2
//# iv = 0xa6b5bc6ab7dafce30ffff5dd
//# hp = 0xd659760d2ba434a226fd37b35c69e2da8211d10c4f12538787d65645d5d1b8e2
//# [...]
//# packet = 0x5558b1c60ae7b6b932bc27d786f4bc2bb20f2162ba
#[test]
fn a5_chacha20_short_header_v2() {
    let (_, _, plain) = chacha20_short_header(
        VERSION_2,
        "3bfcddd72bcf02541d7fa0dd1f5f9eeea817e09a6963a0e6c7df0f9a1bab90f2",
        "a6b5bc6ab7dafce30ffff5dd",
        "d659760d2ba434a226fd37b35c69e2da8211d10c4f12538787d65645d5d1b8e2",
        "5558b1c60ae7b6b932bc27d786f4bc2bb20f2162ba",
    );
    assert_eq!(plain, [0x01]);
}
