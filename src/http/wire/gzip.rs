//! A gzip body (RFC 1952) inflated here, a piece at a time, as its compressed
//! bytes arrive: each piece of output goes to the route's reader before more is
//! inflated, so a reader that stops at its limit stops the inflating with it.
//! Whatever a body would inflate to, no more than `limit` and one piece is ever
//! inflated; the runtime's own `DecompressionStream` would inflate as fast as
//! it is fed, and a body refused had to be read through it to be drained.

use miniz_oxide::inflate::stream::{inflate, InflateState};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};

use crate::http::error::ApiError;

/// What one inflating step writes at most before the reader sees it.
const PIECE_BYTES: usize = 16 * 1024;
/// A header's longest (its optional name, comment and extra field): gzip
/// writers name no file at all, or a short one.
const MAX_HEADER_BYTES: usize = 4096;
/// The trailer: the data's CRC-32, then its length modulo 2^32, little-endian.
const TRAILER_BYTES: usize = 8;

const NOT_GZIP: &str = "the request body is not gzip, or broke off";

/// Where the stream is.
enum Part {
    /// The header's bytes as they come, until the whole header is in.
    Header(Vec<u8>),
    /// The deflate stream.
    Deflate,
    /// The trailer's bytes as they come; nothing may follow them.
    Trailer(Vec<u8>),
}

/// One gzip member, fed its compressed bytes by `push` and closed by `finish`.
pub struct Gunzip {
    part: Part,
    inflater: Box<InflateState>,
    piece: Vec<u8>,
    crc: u32,
    length: u32,
}

impl Default for Gunzip {
    fn default() -> Self {
        Self {
            part: Part::Header(Vec::new()),
            inflater: InflateState::new_boxed(DataFormat::Raw),
            piece: vec![0; PIECE_BYTES],
            crc: 0,
            length: 0,
        }
    }
}

impl Gunzip {
    /// The next compressed bytes, wherever the body was cut. Each piece of
    /// their output goes to `take` as soon as it is inflated; what `take`
    /// refuses stops the inflating there and is the answer.
    pub fn push(
        &mut self,
        mut input: &[u8],
        take: &mut dyn FnMut(&[u8]) -> Result<(), ApiError>,
    ) -> Result<(), ApiError> {
        loop {
            match &mut self.part {
                Part::Header(bytes) => {
                    bytes.extend_from_slice(input);
                    let Some(length) = header_length(bytes)? else {
                        return Ok(());
                    };
                    // What came after the header, once: the header is behind.
                    let after = bytes.split_off(length);
                    self.part = Part::Deflate;
                    return self.push(&after, take);
                }
                Part::Deflate => {
                    let step = inflate(&mut self.inflater, input, &mut self.piece, MZFlush::None);
                    input = &input[step.bytes_consumed..];
                    let out = &self.piece[..step.bytes_written];
                    self.crc = crc32(self.crc, out);
                    self.length = self.length.wrapping_add(out.len() as u32);
                    if !out.is_empty() {
                        take(out)?;
                    }
                    match step.status {
                        Ok(MZStatus::StreamEnd) => self.part = Part::Trailer(Vec::new()),
                        Ok(_) if step.bytes_written > 0 || step.bytes_consumed > 0 => {}
                        // Nothing more to inflate until more bytes come.
                        Ok(_) | Err(MZError::Buf) => return Ok(()),
                        Err(_) => return Err(not_gzip()),
                    }
                }
                Part::Trailer(bytes) => {
                    bytes.extend_from_slice(input);
                    return match bytes.len() <= TRAILER_BYTES {
                        true => Ok(()),
                        // One member, as every client writes; a second is not read.
                        false => Err(not_gzip()),
                    };
                }
            }
        }
    }

    /// The body has ended: it must have ended with its trailer, which must
    /// agree with what was inflated.
    pub fn finish(self) -> Result<(), ApiError> {
        let Part::Trailer(trailer) = self.part else {
            return Err(not_gzip());
        };
        let word = |at: usize| {
            trailer
                .get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        match (word(0), word(4)) {
            (Some(crc), Some(length)) if crc == self.crc && length == self.length => Ok(()),
            _ => Err(not_gzip()),
        }
    }
}

/// CRC-32 as gzip's trailer has it (ISO 3309, reflected), `crc` carried on
/// over `bytes`, a byte at a time from a table made at compile time: a body is
/// at most tens of megabytes, and a crate's wider tables cost the Worker's
/// module more than they save here.
fn crc32(crc: u32, bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0; 256];
        let mut n = 0;
        while n < 256 {
            let mut c = n as u32;
            let mut bit = 0;
            while bit < 8 {
                c = if c & 1 == 1 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                bit += 1;
            }
            table[n] = c;
            n += 1;
        }
        table
    };
    let mut c = !crc;
    for &byte in bytes {
        c = TABLE[((c ^ u32::from(byte)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

fn not_gzip() -> ApiError {
    ApiError::BadRequest(NOT_GZIP.to_owned())
}

/// The length of the header at the start of `bytes`, once it is all there
/// (`None` until then); refused when it is not a gzip header of deflate.
fn header_length(bytes: &[u8]) -> Result<Option<usize>, ApiError> {
    const FHCRC: u8 = 0x02;
    const FEXTRA: u8 = 0x04;
    const FNAME: u8 = 0x08;
    const FCOMMENT: u8 = 0x10;
    const RESERVED: u8 = 0xe0;
    let need_more = match bytes.len() > MAX_HEADER_BYTES {
        true => Err(not_gzip()),
        false => Ok(None),
    };
    let Some(fixed) = bytes.get(..10) else {
        return match bytes
            .iter()
            .zip([0x1f, 0x8b, 8])
            .all(|(got, want)| *got == want)
        {
            true => need_more,
            false => Err(not_gzip()),
        };
    };
    let flags = fixed[3];
    if fixed[..3] != [0x1f, 0x8b, 8] || flags & RESERVED != 0 {
        return Err(not_gzip());
    }
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let Some(length) = bytes.get(at..at + 2) else {
            return need_more;
        };
        at += 2 + u16::from_le_bytes([length[0], length[1]]) as usize;
    }
    for field in [FNAME, FCOMMENT] {
        if flags & field != 0 {
            let Some(end) = bytes
                .get(at..)
                .and_then(|rest| rest.iter().position(|&b| b == 0))
            else {
                return need_more;
            };
            at += end + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    match at <= bytes.len() {
        true => Ok(Some(at)),
        false => need_more,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `data` gzipped as a client would: a header, then stored deflate blocks
    /// (what a compressor writes for data it cannot shrink), then the trailer.
    fn stored(data: &[u8], header: &[u8]) -> Vec<u8> {
        let mut body = header.to_vec();
        let blocks: Vec<&[u8]> = data.chunks(65_535).collect();
        for (index, block) in blocks.iter().enumerate() {
            body.push(u8::from(index + 1 == blocks.len()));
            let length = block.len() as u16;
            body.extend_from_slice(&length.to_le_bytes());
            body.extend_from_slice(&(!length).to_le_bytes());
            body.extend_from_slice(block);
        }
        if blocks.is_empty() {
            body.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
        }
        body.extend_from_slice(&crc32(0, data).to_le_bytes());
        body.extend_from_slice(&(data.len() as u32).to_le_bytes());
        body
    }

    const PLAIN: &[u8] = &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

    /// `body` fed in pieces of `size`, gathering what it inflates.
    fn gunzip(body: &[u8], size: usize) -> Result<Vec<u8>, ApiError> {
        let mut gunzip = Gunzip::default();
        let mut out = Vec::new();
        for piece in body.chunks(size.max(1)) {
            gunzip.push(piece, &mut |bytes| {
                out.extend_from_slice(bytes);
                Ok(())
            })?;
        }
        gunzip.finish().map(|()| out)
    }

    /// `megabytes` MiB of zeros, gzipped into a 160th of that.
    fn bomb(megabytes: usize) -> Vec<u8> {
        // A fixed-Huffman block of one literal zero, then as many 258-byte
        // copies of the byte before as it takes: the highest ratio deflate has.
        let mut bits = BitWriter::default();
        bits.put(1, 1); // the last block
        bits.put(1, 2); // fixed Huffman codes
        bits.put_code(0b0011_0000, 8); // the literal 0
        let copies = megabytes * 1024 * 1024 / 258;
        for _ in 0..copies {
            bits.put_code(0b1100_0101, 8); // length 258 (code 285)
            bits.put_code(0, 5); // distance 1
        }
        bits.put_code(0, 7); // end of block
        let mut body = PLAIN.to_vec();
        body.extend_from_slice(&bits.finish());
        let data_length = 1 + copies * 258;
        let mut crc = 0;
        let zeros = vec![0; 1 << 16];
        let mut left = data_length;
        while left > 0 {
            let now = left.min(zeros.len());
            crc = crc32(crc, &zeros[..now]);
            left -= now;
        }
        body.extend_from_slice(&crc.to_le_bytes());
        body.extend_from_slice(&(data_length as u32).to_le_bytes());
        body
    }

    /// Deflate's bits, least significant first; Huffman codes most significant first.
    #[derive(Default)]
    struct BitWriter {
        bytes: Vec<u8>,
        bit: u32,
        used: u8,
    }

    impl BitWriter {
        fn put(&mut self, value: u32, count: u8) {
            for index in 0..count {
                self.bit |= ((value >> index) & 1) << self.used;
                self.used += 1;
                if self.used == 8 {
                    self.bytes.push(self.bit as u8);
                    (self.bit, self.used) = (0, 0);
                }
            }
        }

        fn put_code(&mut self, code: u32, count: u8) {
            for index in (0..count).rev() {
                self.put((code >> index) & 1, 1);
            }
        }

        fn finish(mut self) -> Vec<u8> {
            if self.used > 0 {
                self.bytes.push(self.bit as u8);
            }
            self.bytes
        }
    }

    #[test]
    fn the_crc_is_gzips_in_one_piece_or_many() {
        assert_eq!(crc32(0, b"123456789"), 0xcbf4_3926, "not gzip's CRC-32");
        assert_eq!(crc32(crc32(0, b"1234"), b"56789"), 0xcbf4_3926);
        assert_eq!(crc32(0, b""), 0);
    }

    #[test]
    fn a_body_inflates_to_what_was_gzipped_however_it_is_cut() {
        let data: Vec<u8> = (0..200_000u32).map(|n| (n * 7 % 251) as u8).collect();
        let named = [
            &[0x1f, 0x8b, 8, 0x1c, 0, 0, 0, 0, 0, 3, 2, 0, 9, 9][..],
            b"alerts.json\0a comment\0",
        ]
        .concat();
        for header in [PLAIN, &named] {
            let body = stored(&data, header);
            for size in [1, 7, 4096, body.len()] {
                assert_eq!(gunzip(&body, size).unwrap(), data, "cut every {size} bytes");
            }
        }
        assert_eq!(gunzip(&stored(b"", PLAIN), 3).unwrap(), b"");
        let bomb = bomb(1);
        assert_eq!(gunzip(&bomb, 100).unwrap().len(), 1 + (1 << 20) / 258 * 258);
    }

    #[test]
    fn what_is_not_one_whole_gzip_member_is_refused() {
        let body = stored(b"[1,2,3]", PLAIN);
        let mut wrong_crc = body.clone();
        let at = wrong_crc.len() - 8;
        wrong_crc[at] ^= 1;
        let mut wrong_length = body.clone();
        let at = wrong_length.len() - 1;
        wrong_length[at] ^= 1;
        let mut reserved_flag = body.clone();
        reserved_flag[3] = 0x20;
        let mut not_deflate = body.clone();
        not_deflate[2] = 7;
        let twice = [body.clone(), body.clone()].concat();
        let endless_name = [
            &[0x1f, 0x8b, 8, 0x08, 0, 0, 0, 0, 0, 3][..],
            &[b'a'; MAX_HEADER_BYTES],
        ]
        .concat();
        for (name, bad) in [
            ("plain JSON", b"[1,2,3]".to_vec()),
            ("cut short", body[..body.len() - 3].to_vec()),
            ("cut in its header", body[..5].to_vec()),
            ("a wrong CRC", wrong_crc),
            ("a wrong length", wrong_length),
            ("a reserved flag", reserved_flag),
            ("not deflate", not_deflate),
            ("two members", twice),
            ("a name without end", endless_name),
            ("a broken block", [PLAIN, &[0x07, 0xff, 0xff]].concat()),
        ] {
            assert!(
                matches!(gunzip(&bad, 5), Err(ApiError::BadRequest(ref why)) if why == NOT_GZIP),
                "a body that is {name} was taken as gzip"
            );
        }
    }

    #[test]
    fn a_reader_that_stops_at_its_limit_stops_the_inflating_with_it() {
        // 211 KB on the wire, under the limit as sent, that inflate to 32 MB:
        // fed whole, at once.
        let bomb = bomb(32);
        assert!(bomb.len() < 256 * 1024, "{} bytes", bomb.len());
        let limit = 256 * 1024;
        let mut gunzip = Gunzip::default();
        let mut inflated = 0;
        let answer = gunzip.push(&bomb, &mut |bytes| {
            inflated += bytes.len();
            match inflated > limit {
                true => Err(ApiError::PayloadTooLarge(limit)),
                false => Ok(()),
            }
        });
        assert!(
            matches!(answer, Err(ApiError::PayloadTooLarge(_))),
            "the reader's refusal did not stop the inflating"
        );
        assert!(
            inflated <= limit + PIECE_BYTES,
            "the inflating went on past the reader's limit: {inflated} bytes inflated"
        );
    }
}
