//! The encrypted QUIC-LB block (draft-ietf-quic-load-balancers-21 §4.5): one
//! AES-128-ECB pass over exactly 16 bytes, else a four-round Feistel network
//! whose round function is AES-128-ECB of the expanded half.

use aes::Aes128;
use aes::cipher::generic_array::GenericArray;
use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};

/// An AES-128 key (the block primitive comes from the `aes` crate).
#[derive(Clone)]
pub(super) struct Key(Aes128);

impl Key {
    pub(super) fn new(key: &[u8; 16]) -> Self {
        Key(Aes128::new(GenericArray::from_slice(key)))
    }

    fn aes(&self, block: &mut [u8; 16]) {
        self.0.encrypt_block(GenericArray::from_mut_slice(block));
    }

    /// Encrypts server ID and nonce (5..=19 bytes) in place.
    pub(super) fn encrypt(&self, block: &mut [u8]) {
        if block.len() == 16 {
            //= draft-ietf-quic-load-balancers-21 §4.5.1
            //# When the nonce length and server ID length sum to exactly 16 octets, the server
            //# MUST use a single-pass encryption algorithm.
            self.0.encrypt_block(GenericArray::from_mut_slice(block));
            return;
        }
        let (mut left, mut right) = split(block);
        let n = block.len();
        self.round(n, 1, &left, &mut right, Side::Right);
        self.round(n, 2, &right, &mut left, Side::Left);
        self.round(n, 3, &left, &mut right, Side::Right);
        self.round(n, 4, &right, &mut left, Side::Left);
        join(block, &left, &right);
    }

    /// Decrypts what [`Key::encrypt`] made, in place.
    pub(super) fn decrypt(&self, block: &mut [u8]) {
        if block.len() == 16 {
            self.0.decrypt_block(GenericArray::from_mut_slice(block));
            return;
        }
        // §4.6.2: the passes in reverse. (A load balancer that needs only a
        // server ID within left_0 could stop after three.)
        let (mut left, mut right) = split(block);
        let n = block.len();
        self.round(n, 4, &right, &mut left, Side::Left);
        self.round(n, 3, &left, &mut right, Side::Right);
        self.round(n, 2, &right, &mut left, Side::Left);
        self.round(n, 1, &left, &mut right, Side::Right);
        join(block, &left, &right);
    }

    /// `target ^= truncate(AES(expand(n, pass, input)), half_len)`, then the
    /// odd length's shared nibble cleared on the target's side.
    fn round(&self, n: usize, pass: u8, input: &Half, target: &mut Half, side: Side) {
        let half = n.div_ceil(2);
        //= draft-ietf-quic-load-balancers-21 §4.5.2.2
        //# ExpandResult {
        //#      input_bytes(...),
        //#      ZeroPad(...),
        //#      length(8),
        //#      pass(8)
        //# }
        let mut block = [0u8; 16];
        block[..half].copy_from_slice(&input[..half]);
        block[14] = n as u8;
        block[15] = pass;
        self.aes(&mut block);
        for (t, b) in target[..half].iter_mut().zip(block) {
            *t ^= b;
        }
        if n % 2 == 1 {
            clear_nibble(target, half, side);
        }
    }
}

/// One half of the block, zero past `half_len` (at most 10 bytes).
type Half = [u8; 10];

#[derive(Clone, Copy)]
enum Side {
    Left,
    Right,
}

/// Odd lengths share the middle byte: the left half keeps its high nibble,
/// the right half its low one.
fn clear_nibble(half: &mut Half, half_len: usize, side: Side) {
    match side {
        Side::Left => half[half_len - 1] &= 0xf0,
        Side::Right => half[0] &= 0x0f,
    }
}

//= draft-ietf-quic-load-balancers-21 §4.5.2.3
//# The server splits plaintext_CID into components left_0 and right_0 of equal
//# length half_len. If plaintext_len is odd, right_0 clears its first four bits,
//# and left_0 clears its last four bits.
fn split(block: &[u8]) -> (Half, Half) {
    let n = block.len();
    let half = n.div_ceil(2);
    let mut left = [0u8; 10];
    let mut right = [0u8; 10];
    left[..half].copy_from_slice(&block[..half]);
    right[..half].copy_from_slice(&block[n - half..]);
    if n % 2 == 1 {
        clear_nibble(&mut left, half, Side::Left);
        clear_nibble(&mut right, half, Side::Right);
    }
    (left, right)
}

/// The halves back into `block`, the shared middle byte merged.
fn join(block: &mut [u8], left: &Half, right: &Half) {
    let n = block.len();
    let half = n.div_ceil(2);
    block[n - half..].copy_from_slice(&right[..half]);
    if n % 2 == 1 {
        block[half - 1] = left[half - 1] | right[0];
        block[..half - 1].copy_from_slice(&left[..half - 1]);
    } else {
        block[..half].copy_from_slice(&left[..half]);
    }
}
