//! Byte-scanning kernels of the per-chunk path: 16 bytes at a time with SSE2 on x86-64 (part of
//! the baseline, so no runtime detection), eight at a time as plain `u64` arithmetic elsewhere.
//!
//! Each kernel has a one-line scalar definition in its docs, which the tests check it against.

/// The index of the first C0 control byte (`b < 0x20`) in `bytes`.
#[expect(
    clippy::inline_always,
    reason = "once per text run, in the tokenizer's loop; measured on the reference stream"
)]
#[inline(always)]
pub(crate) fn find_c0(bytes: &[u8]) -> Option<usize> {
    let len = bytes.len();
    let mut i = 0;
    while let Some(block) = bytes.get(i..i + 16) {
        let m = simd::c0_mask(block);
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize);
        }
        i += 16;
    }
    let rem = len - i;
    if rem == 0 {
        return None;
    }
    if len >= 16 {
        // One overlapping block for the tail; its first `16 - rem` lanes were scanned already.
        let m = simd::c0_mask(&bytes[len - 16..]) >> (16 - rem);
        return (m != 0).then(|| i + m.trailing_zeros() as usize);
    }
    bytes[i..].iter().position(|&b| b < 0x20).map(|p| i + p)
}

/// The length of a CSI's parameters at the start of `body` (the bytes after `ESC [`), when they
/// are all parameter bytes (`0x30..=0x3f`), fewer than sixteen, and followed by a final byte
/// (`0x40..=0x7e`) among the first sixteen bytes; `None` otherwise (the caller then scans byte
/// by byte).
#[inline]
pub(crate) fn param_len(body: &[u8]) -> Option<usize> {
    // A byte is a parameter byte exactly when its high nibble is 3: then its lane here is 0.
    let lanes = |word: &[u8; 8]| {
        (u64::from_le_bytes(*word) & 0xf0f0_f0f0_f0f0_f0f0) ^ 0x3030_3030_3030_3030
    };
    let mut n = 0;
    loop {
        let x = lanes(body.get(n..)?.first_chunk::<8>()?);
        if x != 0 {
            n += (x.trailing_zeros() / 8) as usize;
            return (0x40..=0x7e).contains(&body[n]).then_some(n);
        }
        n += 8;
        if n == 16 {
            return None;
        }
    }
}

/// Counts the visible character starts (see `patterns::count_visible`) in `run`, sixteen
/// bytes at a time, until the count reaches `limit` or fewer than 17 bytes are left; returns
/// the count (possibly above `limit`) and how many bytes were counted.
#[inline]
pub(crate) fn count_visible_blocks(run: &[u8], limit: usize) -> (usize, usize) {
    let mut n = 0;
    let mut i = 0;
    // A lane looks at the byte after it too: a block of 16 reads 17 bytes.
    while n < limit
        && let Some(block) = run.get(i..i + 17)
    {
        n += count_capped(simd::visible_mask(block), limit - n);
        i += 16;
    }
    (n, i)
}

/// The number of bits set in `mask`, or `cap` if that is fewer: a few steps for the small caps
/// of `count_visible`, where `count_ones` is a long sequence without a `popcnt` instruction.
#[inline]
fn count_capped(mut mask: u32, cap: usize) -> usize {
    let mut n = 0;
    while mask != 0 && n < cap {
        mask &= mask - 1;
        n += 1;
    }
    n
}

/// Finds the `tokens` in `text` (their starts go into `tokens`) and the `nterrupt` or
/// `NTERRUPT` (into `interrupts`), in increasing order, appended to what the lists hold. Only
/// words whose candidate pair (below) starts at or after `from` are looked at, so that a caller
/// who already searched a prefix of `text` can search only what was added.
///
/// One pass looks for the pairs `ke` (in `tokens`) and `ru` in either case (in `nterrupt`),
/// which the rest of a terminal's text rarely holds, and checks each candidate.
pub(crate) fn find_hints(
    text: &[u8],
    from: usize,
    tokens: &mut Vec<usize>,
    interrupts: &mut Vec<usize>,
) {
    let mut check = |p: usize| {
        if text[p] == b'k' {
            if p >= 2 && text[p - 2..].starts_with(b"tokens") {
                tokens.push(p - 2);
            }
        } else if p >= 4 {
            let word = &text[p - 4..];
            if word.starts_with(b"nterrupt") || word.starts_with(b"NTERRUPT") {
                interrupts.push(p - 4);
            }
        }
    };
    // Candidate positions `p` have `text[p + 1]` too: a block of 16 reads 17 bytes.
    #[cfg_attr(
        not(all(target_arch = "x86_64", target_feature = "sse2")),
        expect(unused_mut, reason = "only x86-64 has a wider kernel")
    )]
    let mut i = from;
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if std::is_x86_feature_detected!("avx2") && from < text.len() {
        // SAFETY: the CPU has AVX2 (detected just above), all the kernel requires.
        i += unsafe { simd::pair_scan_avx2(&text[from..], &mut |p| check(from + p)) };
    }
    while let Some(block) = text.get(i..i + 17) {
        let mut m = simd::pair_mask(block);
        while m != 0 {
            check(i + m.trailing_zeros() as usize);
            m &= m - 1;
        }
        i += 16;
    }
    // The last positions: one block overlapping the ones already looked at, whose lanes are
    // shifted out (then `rem` is below 16), or byte by byte in a text shorter than a block.
    let len = text.len();
    let rem = len.saturating_sub(1).saturating_sub(i);
    if rem > 0 && len >= 17 {
        let mut m = simd::pair_mask(&text[len - 17..]) >> (16 - rem);
        while m != 0 {
            check(i + m.trailing_zeros() as usize);
            m &= m - 1;
        }
    } else {
        for p in i..len.saturating_sub(1) {
            let (a, b) = (text[p], text[p + 1]);
            if (a == b'k' && b == b'e') || (a | 0x20 == b'r' && b | 0x20 == b'u') {
                check(p);
            }
        }
    }
}

/// The SSE2 kernels. SSE2 is part of the x86-64 baseline, so `target_feature = "sse2"` holds
/// on every x86-64 target and the intrinsics need no runtime detection.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod simd {
    use std::arch::x86_64::{
        _mm_and_si128, _mm_andnot_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_loadu_si128,
        _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_setzero_si128,
        _mm_sub_epi8, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256,
        _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
    };

    /// Bit `k` set when `block[k] < 0x20`, for the first 16 bytes of `block`.
    #[inline]
    pub(super) fn c0_mask(block: &[u8]) -> u32 {
        let block: &[u8; 16] = block.first_chunk().expect("a 16-byte block");
        // SAFETY: SSE2 is enabled (this module's `cfg`); the load reads exactly the 16 bytes of
        // `block` and has no alignment requirement.
        let mask = unsafe {
            let v = _mm_loadu_si128(block.as_ptr().cast());
            let below = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
            _mm_movemask_epi8(below)
        };
        // Sixteen lanes give sixteen bits: the sign change cannot lose any.
        mask.cast_unsigned()
    }

    /// Bit `k` set when `block[k..k + 2]` is `ke`, `ru`, `rU`, `Ru` or `RU`, for `k < 16`
    /// (`block` holds at least 17 bytes).
    #[inline]
    pub(super) fn pair_mask(block: &[u8]) -> u32 {
        let first: &[u8; 16] = block.first_chunk().expect("a 16-byte block");
        let second: &[u8; 16] = block[1..].first_chunk().expect("a 17-byte block");
        // SAFETY: SSE2 is enabled (this module's `cfg`); the loads read exactly the 16 bytes
        // of `first` and of `second`, with no alignment requirement.
        let mask = unsafe {
            let a = _mm_loadu_si128(first.as_ptr().cast());
            let b = _mm_loadu_si128(second.as_ptr().cast());
            let case = _mm_set1_epi8(0x20);
            let ke = _mm_and_si128(
                _mm_cmpeq_epi8(a, _mm_set1_epi8(b'k'.cast_signed())),
                _mm_cmpeq_epi8(b, _mm_set1_epi8(b'e'.cast_signed())),
            );
            let ru = _mm_and_si128(
                _mm_cmpeq_epi8(_mm_or_si128(a, case), _mm_set1_epi8(b'r'.cast_signed())),
                _mm_cmpeq_epi8(_mm_or_si128(b, case), _mm_set1_epi8(b'u'.cast_signed())),
            );
            _mm_movemask_epi8(_mm_or_si128(ke, ru))
        };
        mask.cast_unsigned()
    }

    /// Bit `k` set when `block[k]` starts a visible character: `0x21..=0x7f`, or a lead byte
    /// (`0xc0..`) other than `E2 94..96` (box drawing) and `C2 A0` (no-break space), for
    /// `k < 16` (`block` holds at least 17 bytes).
    #[inline]
    pub(super) fn visible_mask(block: &[u8]) -> u32 {
        let first: &[u8; 16] = block.first_chunk().expect("a 16-byte block");
        let second: &[u8; 16] = block[1..].first_chunk().expect("a 17-byte block");
        // SAFETY: SSE2 is enabled (this module's `cfg`); the loads read exactly the 16 bytes
        // of `first` and of `second`, with no alignment requirement.
        let mask = unsafe {
            let splat = |byte: u8| _mm_set1_epi8(byte.cast_signed());
            let this = _mm_loadu_si128(first.as_ptr().cast());
            let next = _mm_loadu_si128(second.as_ptr().cast());
            // Signed compares: `0x21..=0x7f` are the bytes above 0x20 that are non-negative,
            // `0xc0..=0xff` the negative ones above -65.
            let ascii = _mm_cmpgt_epi8(this, splat(0x20));
            let lead = _mm_and_si128(
                _mm_cmpgt_epi8(this, splat(0xbf)),
                _mm_cmpgt_epi8(_mm_setzero_si128(), this),
            );
            let next_boxy = {
                let off = _mm_sub_epi8(next, splat(0x94));
                _mm_cmpeq_epi8(_mm_min_epu8(off, splat(2)), off)
            };
            let boxy = _mm_and_si128(_mm_cmpeq_epi8(this, splat(0xe2)), next_boxy);
            let nbsp = _mm_and_si128(
                _mm_cmpeq_epi8(this, splat(0xc2)),
                _mm_cmpeq_epi8(next, splat(0xa0)),
            );
            let hidden = _mm_or_si128(boxy, nbsp);
            _mm_movemask_epi8(_mm_or_si128(ascii, _mm_andnot_si128(hidden, lead)))
        };
        mask.cast_unsigned()
    }

    /// Calls `found` with every position `p` where `text[p..p + 2]` is `ke`, `ru`, `rU`, `Ru`
    /// or `RU`, in order, 32 positions at a time; returns the position where it stopped
    /// (fewer than 33 bytes were left).
    #[target_feature(enable = "avx2")]
    pub(super) fn pair_scan_avx2(text: &[u8], found: &mut impl FnMut(usize)) -> usize {
        let splat = |byte: u8| _mm256_set1_epi8(byte.cast_signed());
        let (case, k_, e_, r_, u_) = (
            splat(0x20),
            splat(b'k'),
            splat(b'e'),
            splat(b'r'),
            splat(b'u'),
        );
        // Bit `k` set when `block[k..k + 2]` is a pair, for `k < 32` (`block`: 33 bytes).
        let mask = |block: &[u8]| {
            let first: &[u8; 32] = block.first_chunk().expect("a 32-byte block");
            let second: &[u8; 32] = block[1..].first_chunk().expect("a 33-byte block");
            // SAFETY: the loads read exactly the 32 bytes of `first` and of `second`, with no
            // alignment requirement (and AVX2 is enabled in this function).
            let (this, next) = unsafe {
                (
                    _mm256_loadu_si256(first.as_ptr().cast()),
                    _mm256_loadu_si256(second.as_ptr().cast()),
                )
            };
            let ke = _mm256_and_si256(_mm256_cmpeq_epi8(this, k_), _mm256_cmpeq_epi8(next, e_));
            let ru = _mm256_and_si256(
                _mm256_cmpeq_epi8(_mm256_or_si256(this, case), r_),
                _mm256_cmpeq_epi8(_mm256_or_si256(next, case), u_),
            );
            u64::from(_mm256_movemask_epi8(_mm256_or_si256(ke, ru)).cast_unsigned())
        };
        let mut i = 0;
        // 64 positions a turn (pairs are rare: one test for both halves), then 32.
        while let Some(block) = text.get(i..i + 65) {
            let mut m = mask(block) | mask(&block[32..]) << 32;
            while m != 0 {
                found(i + m.trailing_zeros() as usize);
                m &= m - 1;
            }
            i += 64;
        }
        if let Some(block) = text.get(i..i + 33) {
            let mut m = mask(block);
            while m != 0 {
                found(i + m.trailing_zeros() as usize);
                m &= m - 1;
            }
            i += 32;
        }
        i
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
use swar as simd;

/// Portable versions of the SSE2 kernels, eight bytes at a time (used where SSE2 is missing,
/// and by the tests everywhere).
#[cfg_attr(
    all(target_arch = "x86_64", target_feature = "sse2", not(test)),
    expect(dead_code, reason = "the SSE2 kernels are used on x86-64")
)]
mod swar {
    const HIGH: u64 = 0x8080_8080_8080_8080;

    /// One bit per byte of `word` (bit `k` for byte `k`) from a word whose bytes are `0x80`
    /// (set) or `0x00`.
    #[inline]
    fn compress(flags: u64) -> u32 {
        // Byte `k`'s bit lands at bit 56 + k of the product, and no two partial products overlap.
        u32::try_from(((flags >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56).unwrap_or(0)
    }

    #[inline]
    fn word(bytes: &[u8]) -> u64 {
        u64::from_le_bytes(*bytes.first_chunk::<8>().unwrap_or(&[0xff; 8]))
    }

    /// Bit `k` set when `block[k] < 0x20`, for the first 16 bytes of `block`.
    #[inline]
    pub(super) fn c0_mask(block: &[u8]) -> u32 {
        let half = |w: u64| {
            // A byte is below 0x20 when its top three bits are clear.
            let any_top = (w | (w << 1) | (w << 2)) & HIGH;
            compress(!any_top & HIGH)
        };
        half(word(block)) | half(word(&block[8..])) << 8
    }

    /// Bit `k` set when `block[k]` starts a visible character (see the SSE2 kernel), for
    /// `k < 16` (`block` holds at least 17 bytes). Byte by byte: only the tests and non-x86
    /// targets use it.
    #[inline]
    pub(super) fn visible_mask(block: &[u8]) -> u32 {
        (0..16).fold(0, |mask, k| {
            let (b, next) = (block[k], block[k + 1]);
            let visible = (0x21..=0x7f).contains(&b)
                || (b >= 0xc0
                    && !(b == 0xe2 && (0x94..=0x96).contains(&next))
                    && !(b == 0xc2 && next == 0xa0));
            mask | u32::from(visible) << k
        })
    }

    /// `0x80` in each byte of `w` equal to `byte`, `0x00` elsewhere (exact: no borrows).
    #[inline]
    fn eq(w: u64, byte: u8) -> u64 {
        let x = w ^ (u64::from(byte) * 0x0101_0101_0101_0101);
        let low = 0x7f7f_7f7f_7f7f_7f7f;
        !(((x & low) + low) | x) & HIGH
    }

    /// Bit `k` set when `block[k..k + 2]` is `ke`, `ru`, `rU`, `Ru` or `RU`, for `k < 16`
    /// (`block` holds at least 17 bytes).
    #[inline]
    pub(super) fn pair_mask(block: &[u8]) -> u32 {
        let half = |a: u64, b: u64| {
            let case = 0x2020_2020_2020_2020;
            let ke = eq(a, b'k') & eq(b, b'e');
            let ru = eq(a | case, b'r') & eq(b | case, b'u');
            compress(ke | ru)
        };
        half(word(block), word(&block[1..])) | half(word(&block[8..]), word(&block[9..])) << 8
    }
}

#[cfg(test)]
mod tests;
