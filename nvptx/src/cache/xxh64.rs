//! XXH64 (the xxHash project's 64-bit hash, as its specification defines it): the
//! integrity checksum of a cache entry ([`super::entry`]). A fast non-cryptographic
//! hash: four independent multiply-rotate lanes over 32-byte stripes, fast in plain
//! Rust on any CPU. Pure code.

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const P4: u64 = 0x85EB_CA77_C2B2_AE63;
const P5: u64 = 0x27D4_EB2F_1656_67C5;

#[inline(always)]
fn round(acc: u64, lane: u64) -> u64 {
    acc.wrapping_add(lane.wrapping_mul(P2))
        .rotate_left(31)
        .wrapping_mul(P1)
}

#[inline(always)]
fn merge(acc: u64, lane: u64) -> u64 {
    (acc ^ round(0, lane)).wrapping_mul(P1).wrapping_add(P4)
}

#[inline(always)]
fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

/// The XXH64 hash of `data` with `seed`.
pub fn xxh64(data: &[u8], seed: u64) -> u64 {
    let len = data.len();
    let stripes = len / 32 * 32;
    let mut acc = if len >= 32 {
        let mut v = [
            seed.wrapping_add(P1).wrapping_add(P2),
            seed.wrapping_add(P2),
            seed,
            seed.wrapping_sub(P1),
        ];
        for s in data[..stripes].chunks_exact(32) {
            for (k, v) in v.iter_mut().enumerate() {
                *v = round(*v, u64_at(s, 8 * k));
            }
        }
        let mut acc = v[0]
            .rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18));
        for lane in v {
            acc = merge(acc, lane);
        }
        acc
    } else {
        seed.wrapping_add(P5)
    };
    acc = acc.wrapping_add(len as u64);
    let mut rest = &data[stripes..];
    while rest.len() >= 8 {
        acc ^= round(0, u64_at(rest, 0));
        acc = acc.rotate_left(27).wrapping_mul(P1).wrapping_add(P4);
        rest = &rest[8..];
    }
    if rest.len() >= 4 {
        let lane = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as u64;
        acc ^= lane.wrapping_mul(P1);
        acc = acc.rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
        rest = &rest[4..];
    }
    for &b in rest {
        acc ^= (b as u64).wrapping_mul(P5);
        acc = acc.rotate_left(11).wrapping_mul(P1);
    }
    acc ^= acc >> 33;
    acc = acc.wrapping_mul(P2);
    acc ^= acc >> 29;
    acc = acc.wrapping_mul(P3);
    acc ^ (acc >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        // Answers of the xxHash project's reference library (libxxhash 0.8.1).
        for (s, want) in [
            (&b""[..], 0xef46db3751d8e999),
            (b"a", 0xd24ec4f1a98c6e5b),
            (b"abc", 0x44bc2cf5ad770999),
            (b"message digest", 0x066ed728fceeb3be),
            (b"abcdefghijklmnopqrstuvwxyz", 0xcfe1f278fa89835c),
        ] {
            assert_eq!(xxh64(s, 0), want, "{:?}", String::from_utf8_lossy(s));
        }
        // Every path through the tail (8-, 4- and 1-byte steps after 0, 1 or more
        // stripes), on bytes (31 i + 7) mod 251.
        let data: Vec<u8> = (0..70_000u32).map(|i| ((i * 31 + 7) % 251) as u8).collect();
        for (n, want) in [
            (0, 0xef46db3751d8e999),
            (1, 0xa96c7f0ce858bbb7),
            (2, 0xac378c5993cd5f9a),
            (3, 0x56e6957632a487f9),
            (4, 0xc60d15b1e3ff8f04),
            (5, 0x808815858624dd4e),
            (7, 0xafbefc3d6c6f9a8e),
            (8, 0x3da5c7aa269683e0),
            (9, 0x465ec429b13c3892),
            (11, 0xfba00babfa165738),
            (12, 0x9650fde93a383e90),
            (15, 0xdee89d8a065a6233),
            (16, 0x1330489a77679c80),
            (17, 0x0bbe879c6150fef5),
            (24, 0xedacf320a9fe41eb),
            (31, 0x3391303d485e846e),
            (32, 0x40b7aff75d45bbc8),
            (33, 0x4997cae4951c17a5),
            (35, 0x64579322362a42a4),
            (36, 0x055c820c07a82f3a),
            (39, 0x580728fd5c145739),
            (40, 0xf95cf6f5c08a3d3b),
            (47, 0xbe144774a53030c0),
            (48, 0xad721d0452b5d05f),
            (63, 0x2944b4dafc69b206),
            (64, 0xbb76f6ef19bd5a1b),
            (65, 0x814e0c654a9fd640),
            (100, 0xf0b29a915621716d),
            (127, 0x00deaab131cff89b),
            (128, 0x4e129a6481985674),
            (1000, 0x9e3300c1cde3c58d),
            (4096, 0x7884ed09077b7f82),
            (4101, 0xd66b1ce2196af229),
            (65536, 0xb153724f6f6efd30),
            (70000, 0x020a8517f6f8a822),
        ] {
            assert_eq!(xxh64(&data[..n], 0), want, "{n} bytes");
        }
        assert_eq!(xxh64(&data[..100], 0x9E3779B97F4A7C15), 0xe93a69cdbe4cc97b);
    }
}
