//! Unit tests for `scan`: every kernel agrees with its scalar definition, on x86-64 both the
//! SSE2 and the portable versions.

use super::{find_c0, find_hints, param_len, swar};

/// Bytes that exercise every class boundary the kernels test.
const EDGES: [u8; 20] = [
    0x00, 0x1b, 0x1f, 0x20, 0x21, 0x2f, 0x30, 0x3f, 0x40, 0x5b, 0x7e, 0x7f, 0x80, 0x94, 0x96, 0xa0,
    0xbf, 0xc2, 0xe2, 0xff,
];

/// A deterministic byte soup mixing the edge bytes with text.
fn soup(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if x.is_multiple_of(3) {
                EDGES[(x as usize >> 4) % EDGES.len()]
            } else {
                b'a' + u8::try_from((x >> 8) % 26).unwrap_or(0)
            }
        })
        .collect()
}

#[test]
fn find_c0_agrees_with_a_plain_scan() {
    for seed in 0..200 {
        let data = soup(usize::try_from(seed % 70).unwrap_or(0), seed);
        for start in 0..data.len() {
            let d = &data[start..];
            assert_eq!(find_c0(d), d.iter().position(|&b| b < 0x20), "{d:?}");
        }
    }
    let mut text = vec![b'x'; 100];
    assert_eq!(find_c0(&text), None);
    text[99] = 0x1f;
    assert_eq!(find_c0(&text), Some(99));
}

#[test]
fn c0_masks_agree_with_a_plain_scan() {
    for seed in 0..500 {
        let block = soup(16, seed);
        let want = block
            .iter()
            .enumerate()
            .fold(0u32, |m, (k, &b)| m | u32::from(b < 0x20) << k);
        assert_eq!(swar::c0_mask(&block), want, "{block:?}");
        assert_eq!(super::simd::c0_mask(&block), want, "{block:?}");
    }
}

#[test]
fn param_len_finds_short_parameter_runs_followed_by_a_final_byte() {
    assert_eq!(param_len(b"2Kabcdefgh"), Some(1));
    assert_eq!(param_len(b"mabcdefgh"), Some(0));
    assert_eq!(param_len(b"38;5;174mxxxxxxx"), Some(8));
    assert_eq!(
        param_len(b"38;5;174m"),
        None,
        "fewer than sixteen bytes to look at"
    );
    assert_eq!(param_len(b"38;2;255;255;25m"), Some(15));
    assert_eq!(
        param_len(b"38;2;255;255;255m"),
        None,
        "sixteen parameter bytes"
    );
    assert_eq!(param_len(b"?2026hxxx"), Some(5));
    assert_eq!(
        param_len(b"1 qxxxxxxx"),
        None,
        "intermediate bytes take the slow path"
    );
    assert_eq!(
        param_len(b"12\x1bxxxxxx"),
        None,
        "an ESC is not a final byte"
    );
    assert_eq!(
        param_len(b"2K"),
        None,
        "fewer than eight bytes take the slow path"
    );
    for seed in 0..2000 {
        let mut body = soup(20, seed);
        // Mostly parameter bytes, so that every length is reached.
        let params = usize::try_from(seed % 18).unwrap_or(0);
        for (k, b) in body.iter_mut().take(params).enumerate() {
            *b = b"0123456789;:<=>?"[(k + usize::try_from(seed).unwrap_or(0)) % 16];
        }
        let len = usize::try_from(seed % 21).unwrap_or(0);
        let body = &body[..len];
        let n = body
            .iter()
            .take_while(|b| (0x30..=0x3f).contains(*b))
            .count();
        let want = (n < 16 && n < len && (0x40..=0x7e).contains(&body[n]) && n < (len / 8) * 8)
            .then_some(n);
        assert_eq!(param_len(body), want, "{body:?}");
    }
}

#[test]
fn pair_masks_agree_with_a_plain_scan() {
    for seed in 0..2000 {
        let mut block = soup(17, seed);
        // Plant pairs often enough to hit every lane.
        let at = usize::try_from(seed % 16).unwrap_or(0);
        let pair: &[u8; 2] =
            [b"ke", b"ru", b"RU", b"rU", b"kE", b"Ke"][usize::try_from(seed % 6).unwrap_or(0)];
        block[at..at + 2].copy_from_slice(pair);
        let want = (0..16).fold(0u32, |m, k| {
            let (a, b) = (block[k], block[k + 1]);
            let hit = (a == b'k' && b == b'e') || (a | 0x20 == b'r' && b | 0x20 == b'u');
            m | u32::from(hit) << k
        });
        assert_eq!(swar::pair_mask(&block), want, "{block:?}");
        assert_eq!(super::simd::pair_mask(&block), want, "{block:?}");
    }
}

#[test]
fn find_hints_finds_every_word_and_nothing_else() {
    let words: [&[u8]; 8] = [
        b"tokens",
        b"nterrupt",
        b"NTERRUPT",
        b"token",
        b"nterRUPT",
        b"ke",
        b"ru",
        b"interrupts",
    ];
    for seed in 0..1000u32 {
        let mut text = Vec::new();
        let mut x = seed;
        for _ in 0..usize::try_from(seed % 12).unwrap_or(0) {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            text.extend_from_slice(&soup(usize::try_from(x % 23).unwrap_or(0), x));
            text.extend_from_slice(words[usize::try_from(x >> 8).unwrap_or(0) % words.len()]);
        }
        let find = |needles: &[&[u8]]| -> Vec<usize> {
            (0..text.len())
                .filter(|&p| needles.iter().any(|n| text[p..].starts_with(n)))
                .collect()
        };
        let (mut tokens, mut interrupts) = (vec![], vec![]);
        find_hints(&text, 0, &mut tokens, &mut interrupts);
        assert_eq!(tokens, find(&[b"tokens"]), "{text:?}");
        assert_eq!(interrupts, find(&[b"nterrupt", b"NTERRUPT"]), "{text:?}");
        // From a later position: only the words whose pair (`ke`, `ru`) starts there or after.
        let from = usize::try_from(seed).unwrap_or(0) % (text.len() + 1);
        let (mut tokens, mut interrupts) = (vec![], vec![]);
        find_hints(&text, from, &mut tokens, &mut interrupts);
        let later = |hits: Vec<usize>, pair_at: usize| -> Vec<usize> {
            hits.into_iter().filter(|&s| s + pair_at >= from).collect()
        };
        assert_eq!(tokens, later(find(&[b"tokens"]), 2), "{text:?} from {from}");
        assert_eq!(
            interrupts,
            later(find(&[b"nterrupt", b"NTERRUPT"]), 4),
            "{text:?} from {from}"
        );
    }
}

#[test]
fn visible_masks_agree_with_the_portable_kernel() {
    for seed in 0..3000 {
        let mut block = soup(17, seed);
        // Plant the two-byte cases in every lane.
        let at = usize::try_from(seed % 16).unwrap_or(0);
        let pair: [u8; 2] = [
            [0xe2, 0x94],
            [0xe2, 0x96],
            [0xe2, 0x97],
            [0xc2, 0xa0],
            [0xc2, 0xa1],
        ][usize::try_from(seed % 5).unwrap_or(0)];
        block[at..at + 2].copy_from_slice(&pair);
        assert_eq!(
            super::simd::visible_mask(&block),
            swar::visible_mask(&block),
            "{block:?}"
        );
    }
}

#[test]
fn count_visible_agrees_with_the_byte_by_byte_count() {
    for seed in 0..2000 {
        let len = usize::try_from(seed % 90).unwrap_or(0);
        let mut run = soup(len, seed);
        if seed % 3 == 0 {
            // Long invisible stretches: box drawing and spaces, then text.
            run = "─"
                .repeat(usize::try_from(seed % 40).unwrap_or(0))
                .into_bytes();
            run.extend_from_slice(b"   \xc2\xa0 ");
            run.extend_from_slice(&soup(len, seed));
        }
        for limit in [1, 2, 3, 100] {
            let want = crate::patterns::count_visible_bytes(&run, limit);
            assert_eq!(
                crate::patterns::count_visible(&run, limit),
                want,
                "{run:?} {limit}"
            );
        }
    }
}
