//! SHA-256 (FIPS 180-4): the key of a cache entry, a digest of every input it was made
//! from (hundreds of KiB of PTX for one image, hashed at every image load). Written
//! here because the plugin has no hashing dependency. The block function has two
//! engines ([`Engine`]): the x86 SHA extensions when the CPU has them, and portable
//! code otherwise; [`Sha256::new`] takes the best one the CPU runs. Pure code; a
//! [`Sha256`] is owned by one thread at a time (`Send`).

/// The round constants.
const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// The initial hash value.
const H0: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// A block function of SHA-256. `Copy`, plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Plain Rust, on every CPU.
    Portable,
    /// The x86 SHA extensions (`sha256rnds2`, `sha256msg1/2`) with SSSE3 and SSE4.1.
    ShaNi,
}

impl Engine {
    /// Whether this CPU runs the engine (the answer is cached by std).
    pub fn runs_here(self) -> bool {
        match self {
            Engine::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Engine::ShaNi => shani::available(),
            #[cfg(not(target_arch = "x86_64"))]
            Engine::ShaNi => false,
        }
    }

    /// The fastest engine this CPU runs.
    pub fn best() -> Engine {
        if Engine::ShaNi.runs_here() {
            Engine::ShaNi
        } else {
            Engine::Portable
        }
    }

    /// Every engine, whether or not this CPU runs it.
    pub const ALL: [Engine; 2] = [Engine::Portable, Engine::ShaNi];

    /// A short name (`portable`, `sha-ni`).
    pub fn name(self) -> &'static str {
        match self {
            Engine::Portable => "portable",
            Engine::ShaNi => "sha-ni",
        }
    }

    /// Compresses whole 64-byte blocks of `blocks` into `state`.
    fn compress(self, state: &mut [u32; 8], blocks: &[u8]) {
        debug_assert_eq!(blocks.len() % 64, 0);
        match self {
            #[cfg(target_arch = "x86_64")]
            Engine::ShaNi => {
                debug_assert!(shani::available());
                // SAFETY: the CPU has the SHA, SSSE3 and SSE4.1 instructions: an
                // `Engine::ShaNi` is only used where `runs_here` said so
                // (`Sha256::with_engine`).
                unsafe { shani::compress(state, blocks) }
            }
            _ => compress_portable(state, blocks),
        }
    }
}

/// An incremental SHA-256 computation: [`Sha256::update`] any number of times, then
/// [`Sha256::finish`].
#[derive(Clone)]
pub struct Sha256 {
    engine: Engine,
    state: [u32; 8],
    /// Bytes not yet compressed (fewer than 64).
    buf: [u8; 64],
    buf_len: usize,
    /// Bytes hashed so far.
    total: u64,
}

impl Default for Sha256 {
    fn default() -> Self {
        Sha256::new()
    }
}

impl Sha256 {
    /// A fresh computation on the best engine of this CPU ([`Engine::best`]).
    pub fn new() -> Sha256 {
        Sha256::on(Engine::best())
    }

    /// A fresh computation on `engine`; `None` when this CPU does not run it.
    pub fn with_engine(engine: Engine) -> Option<Sha256> {
        engine.runs_here().then(|| Sha256::on(engine))
    }

    /// The engine computing it.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// `engine` must run here.
    fn on(engine: Engine) -> Sha256 {
        Sha256 {
            engine,
            state: H0,
            buf: [0; 64],
            buf_len: 0,
            total: 0,
        }
    }

    /// Hashes `data` after what came before.
    pub fn update(&mut self, mut data: &[u8]) {
        self.total = self.total.wrapping_add(data.len() as u64);
        if self.buf_len > 0 {
            let take = (64 - self.buf_len).min(data.len());
            self.buf[self.buf_len..self.buf_len + take].copy_from_slice(&data[..take]);
            self.buf_len += take;
            data = &data[take..];
            if self.buf_len < 64 {
                return;
            }
            let block = self.buf;
            self.engine.compress(&mut self.state, &block);
            self.buf_len = 0;
        }
        let whole = data.len() / 64 * 64;
        if whole > 0 {
            self.engine.compress(&mut self.state, &data[..whole]);
        }
        let rest = &data[whole..];
        self.buf[..rest.len()].copy_from_slice(rest);
        self.buf_len = rest.len();
    }

    /// The digest of everything given to [`Sha256::update`].
    pub fn finish(mut self) -> [u8; 32] {
        let bits = self.total.wrapping_mul(8);
        let mut pad = [0u8; 72];
        pad[0] = 0x80;
        // Pad to 56 mod 64, then the length in bits, big-endian.
        let n = if self.buf_len < 56 {
            56 - self.buf_len
        } else {
            120 - self.buf_len
        };
        pad[n..n + 8].copy_from_slice(&bits.to_be_bytes());
        let total = self.total;
        self.update(&pad[..n + 8]);
        debug_assert_eq!(self.buf_len, 0);
        self.total = total;
        let mut out = [0u8; 32];
        for (o, w) in out.chunks_exact_mut(4).zip(self.state) {
            o.copy_from_slice(&w.to_be_bytes());
        }
        out
    }
}

/// The digest of `data`.
pub fn digest(data: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(data);
    h.finish()
}

/// The block function in plain Rust.
fn compress_portable(state: &mut [u32; 8], blocks: &[u8]) {
    for block in blocks.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, c) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = h
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            h = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (s, v) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
            *s = s.wrapping_add(v);
        }
    }
}

/// The block function with the x86 SHA extensions (`sha256rnds2`, `sha256msg1/2`):
/// four rounds per pair of `sha256rnds2`, the message schedule in four registers.
#[cfg(target_arch = "x86_64")]
mod shani {
    use super::K;
    use std::arch::x86_64::*;

    /// Whether this CPU has the instructions [`compress`] uses (cached by std).
    pub fn available() -> bool {
        is_x86_feature_detected!("sha")
            && is_x86_feature_detected!("sse2")
            && is_x86_feature_detected!("ssse3")
            && is_x86_feature_detected!("sse4.1")
    }

    /// Four message words `w` plus their round constants (group `i` of 16), through
    /// four rounds. A macro so that it expands inside [`compress`]'s feature context.
    macro_rules! rounds4 {
        ($abef:ident, $cdgh:ident, $w:expr, $i:expr) => {{
            let k = _mm_loadu_si128(K.as_ptr().add(4 * $i).cast());
            let t = _mm_add_epi32($w, k);
            $cdgh = _mm_sha256rnds2_epu32($cdgh, $abef, t);
            let t = _mm_shuffle_epi32(t, 0x0e);
            $abef = _mm_sha256rnds2_epu32($abef, $cdgh, t);
        }};
    }

    /// The next four message words from the previous sixteen (`w0` oldest).
    macro_rules! schedule {
        ($w0:expr, $w1:expr, $w2:expr, $w3:expr) => {{
            let t = _mm_sha256msg1_epu32($w0, $w1);
            let t = _mm_add_epi32(t, _mm_alignr_epi8($w3, $w2, 4));
            _mm_sha256msg2_epu32(t, $w3)
        }};
    }

    /// # Safety
    /// The CPU must have the SHA, SSSE3 and SSE4.1 instructions ([`available`]);
    /// `blocks` is whole 64-byte blocks.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub unsafe fn compress(state: &mut [u32; 8], blocks: &[u8]) {
        // SAFETY: the loads and stores touch the 8 words of `state`, the 64 bytes of
        // each block and the 64 constants (`i` < 16), all unaligned; the rest is
        // register arithmetic on the features this function is compiled for.
        unsafe {
            // Byte order within each 32-bit word (the message is big-endian).
            let swap = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
            let dcba = _mm_loadu_si128(state.as_ptr().cast());
            let hgfe = _mm_loadu_si128(state.as_ptr().add(4).cast());
            // The instructions keep the state as (A,B,E,F) and (C,D,G,H).
            let cdab = _mm_shuffle_epi32(dcba, 0xb1);
            let efgh = _mm_shuffle_epi32(hgfe, 0x1b);
            let mut abef = _mm_alignr_epi8(cdab, efgh, 8);
            let mut cdgh = _mm_blend_epi16(efgh, cdab, 0xf0);
            for block in blocks.chunks_exact(64) {
                let (abef0, cdgh0) = (abef, cdgh);
                let p = block.as_ptr();
                let mut w0 = _mm_shuffle_epi8(_mm_loadu_si128(p.cast()), swap);
                let mut w1 = _mm_shuffle_epi8(_mm_loadu_si128(p.add(16).cast()), swap);
                let mut w2 = _mm_shuffle_epi8(_mm_loadu_si128(p.add(32).cast()), swap);
                let mut w3 = _mm_shuffle_epi8(_mm_loadu_si128(p.add(48).cast()), swap);
                rounds4!(abef, cdgh, w0, 0);
                rounds4!(abef, cdgh, w1, 1);
                rounds4!(abef, cdgh, w2, 2);
                rounds4!(abef, cdgh, w3, 3);
                for i in 4..16 {
                    let w4 = schedule!(w0, w1, w2, w3);
                    rounds4!(abef, cdgh, w4, i);
                    (w0, w1, w2, w3) = (w1, w2, w3, w4);
                }
                abef = _mm_add_epi32(abef, abef0);
                cdgh = _mm_add_epi32(cdgh, cdgh0);
            }
            let feba = _mm_shuffle_epi32(abef, 0x1b);
            let dchg = _mm_shuffle_epi32(cdgh, 0xb1);
            let dcba = _mm_blend_epi16(feba, dchg, 0xf0);
            let hgfe = _mm_alignr_epi8(dchg, feba, 8);
            _mm_storeu_si128(state.as_mut_ptr().cast(), dcba);
            _mm_storeu_si128(state.as_mut_ptr().add(4).cast(), hgfe);
        }
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(D[(b >> 4) as usize] as char);
        s.push(D[(b & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The engines this CPU runs, said on stderr (past the test harness's capture) so
    /// that a run without the SHA extensions shows it checked the portable code only.
    fn engines(test: &str) -> Vec<Engine> {
        let (here, missing): (Vec<Engine>, Vec<Engine>) =
            Engine::ALL.iter().partition(|e| e.runs_here());
        let names = |v: &[Engine]| v.iter().map(|e| e.name()).collect::<Vec<_>>().join(", ");
        let line = format!(
            "sha256 {test}: checked engine(s): {}{}\n",
            names(&here),
            if missing.is_empty() {
                String::new()
            } else {
                format!("; not on this CPU, not checked: {}", names(&missing))
            }
        );
        // One write, so that lines of tests running at once do not mix.
        let _ = std::io::stderr().write_all(line.as_bytes());
        here
    }

    fn digest_on(e: Engine, data: &[u8]) -> [u8; 32] {
        let mut s = Sha256::with_engine(e).expect("runs here");
        s.update(data);
        s.finish()
    }

    #[test]
    fn known_answers() {
        // FIPS 180-4 examples and the usual extra vectors, on every engine.
        let million = vec![b'a'; 1_000_000];
        for e in engines("known_answers") {
            for (data, want) in [
                (&b""[..], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
                (b"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
                (
                    b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
                ),
                (
                    b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
                    "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
                ),
                (
                    &million[..],
                    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
                ),
            ] {
                assert_eq!(hex(&digest_on(e, data)), want, "{} bytes on {e:?}", data.len());
            }
        }
        assert_eq!(Sha256::new().engine(), Engine::best());
    }

    #[test]
    fn many_lengths_against_a_reference() {
        // The digests of bytes (31 i + 7) mod 251 of every length 0..300 and a few
        // large ones, concatenated and hashed once more: the answer of Python's
        // hashlib (OpenSSL) for the same sequence.
        let data: Vec<u8> = (0..70_000u32).map(|i| ((i * 31 + 7) % 251) as u8).collect();
        let lens: Vec<usize> = (0..300)
            .chain([1000, 4095, 4096, 4097, 65_535, 65_536, 70_000])
            .collect();
        for e in engines("many_lengths_against_a_reference") {
            let mut all = Sha256::with_engine(e).expect("runs here");
            for &n in &lens {
                all.update(&digest_on(e, &data[..n]));
            }
            assert_eq!(
                hex(&all.finish()),
                "a01a8256f9a1663d7241139edd404482241ca8f54d35f4deac42e584509357e9",
                "{e:?}"
            );
        }
    }

    #[test]
    fn pieces_give_the_same_digest() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for e in engines("pieces_give_the_same_digest") {
            let whole = digest_on(e, &data);
            for split in [0, 1, 55, 56, 63, 64, 65, 127, 128, 1000, 4999, 5000] {
                let mut s = Sha256::with_engine(e).expect("runs here");
                s.update(&data[..split]);
                s.update(&data[split..]);
                assert_eq!(s.finish(), whole, "split at {split} on {e:?}");
            }
            let mut s = Sha256::with_engine(e).expect("runs here");
            for b in &data {
                s.update(std::slice::from_ref(b));
            }
            assert_eq!(s.finish(), whole, "byte by byte on {e:?}");
        }
    }

    #[test]
    fn engines_agree() {
        // Every length around the padding boundaries, large ones, and pieces split at
        // pseudo-random points; each engine against the portable code.
        let data: Vec<u8> = (0..70_000u32).map(|i| (i ^ (i >> 5)) as u8).collect();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for e in engines("engines_agree") {
            for len in (0..200).chain([4095, 4096, 4097, 65_536, 70_000]) {
                let want = digest_on(Engine::Portable, &data[..len]);
                assert_eq!(digest_on(e, &data[..len]), want, "{len} bytes on {e:?}");
                let mut s = Sha256::with_engine(e).expect("runs here");
                let mut at = 0;
                while at < len {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let n = ((seed % 150) as usize).min(len - at);
                    s.update(&data[at..at + n]);
                    at += n;
                }
                assert_eq!(s.finish(), want, "{len} bytes in pieces on {e:?}");
            }
        }
    }

    #[test]
    fn an_engine_the_cpu_lacks_is_refused() {
        for e in Engine::ALL {
            assert_eq!(Sha256::with_engine(e).is_some(), e.runs_here(), "{e:?}");
        }
        assert!(Engine::Portable.runs_here());
    }

    #[test]
    fn hex_digits() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }
}
