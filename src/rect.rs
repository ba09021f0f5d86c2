//! Rectangular copies as libgomp describes them (`memcpy2d`, `memcpy3d`, libgomp 14+:
//! `omp_target_memcpy_rect`): each side's base, pitch and origin reduced to the address
//! of its first byte. Pure data, vendor-neutral; a backend turns a [`Rect`] into its
//! driver's copy descriptor.

/// One side of a copy: host (`ord` -1) or device memory, origin already applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    /// libgomp's device ordinal, or -1 for the host.
    pub ord: i32,
    /// Address of the first byte to copy (the origin applied).
    pub ptr: usize,
    /// Bytes per row (pitch).
    pub pitch: usize,
    /// Rows per slice (3-D only; 0 for 2-D).
    pub rows: usize,
}

impl Side {
    /// Applies an origin of `off_bytes` within a row, `off_rows` rows and `off_slices`
    /// slices to `base`; `None` when the address overflows.
    pub fn at(
        ord: i32,
        base: usize,
        pitch: usize,
        rows: usize,
        off: (usize, usize, usize),
    ) -> Option<Side> {
        let (off_bytes, off_rows, off_slices) = off;
        let slice = pitch.checked_mul(rows)?;
        let ptr = base
            .checked_add(off_slices.checked_mul(slice)?)?
            .checked_add(off_rows.checked_mul(pitch)?)?
            .checked_add(off_bytes)?;
        Some(Side {
            ord,
            ptr,
            pitch,
            rows,
        })
    }

    /// True for host memory.
    pub fn is_host(&self) -> bool {
        self.ord < 0
    }
}

/// A copy of `depth` slices (1 for 2-D) of `height` rows of `width` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    /// Destination.
    pub dst: Side,
    /// Source.
    pub src: Side,
    /// Bytes per row.
    pub width: usize,
    /// Rows per slice.
    pub height: usize,
    /// Slices; `None` for a 2-D copy.
    pub depth: Option<usize>,
}

impl Rect {
    /// The device ordinal the copy runs on: the destination's, or the source's when the
    /// destination is the host.
    pub fn device(&self) -> i32 {
        if self.dst.is_host() {
            self.src.ord
        } else {
            self.dst.ord
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_applied() {
        let s = Side::at(0, 1000, 64, 10, (3, 2, 1)).unwrap();
        assert_eq!(s.ptr, 1000 + 640 + 128 + 3);
        assert_eq!(Side::at(0, usize::MAX - 1, 64, 10, (0, 1, 0)), None);
    }

    #[test]
    fn device_side() {
        let h = Side::at(-1, 0, 1, 0, (0, 0, 0)).unwrap();
        let d = Side::at(2, 0, 1, 0, (0, 0, 0)).unwrap();
        let r = |dst, src| Rect {
            dst,
            src,
            width: 1,
            height: 1,
            depth: None,
        };
        assert_eq!(r(h, d).device(), 2);
        assert_eq!(r(d, h).device(), 2);
    }
}
