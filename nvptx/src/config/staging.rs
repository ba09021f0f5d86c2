//! `GOMP_NVPTX_STAGING`: the shape of the staging engine of large pageable copies
//! (`crate::device::copy::staged`, which reads it), its default and its parser, and the
//! smallest copy the engine takes ([`MIN_STAGED`]). Plain data, `Copy`, read once per
//! process with every other setting.

use gomp_plugin::settings::parse_size;

/// Smallest copy that is staged (the staging path's, `device::copy::staged`; here,
/// below the device, because the device's parts ask it too: `Parts::stage`).
pub const MIN_STAGED: usize = 4 << 20;

/// The staging engine's shape. Default: 4 MiB buffers, 2 per lane, and three lanes per
/// four processors, at most 12 (96 MiB page-locked, allocated on the first staged
/// copy): the lane count that moved a 1 GiB pageable copy fastest on a 16-core host,
/// where more lanes than that were slower again (`bench/staging-sweep.sh`,
/// bench/results/staging-sweep.md). An experiment knob, `GOMP_NVPTX_STAGING=
/// "threads,chunk_bytes,buffers"`, overrides it (not documented for users). Plain
/// data, `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StagingParams {
    /// Lanes (host threads copying, the caller's included), 1..=64.
    pub threads: usize,
    /// Bytes per staging buffer (the largest piece), 64 KiB..=256 MiB, page multiple.
    pub chunk: usize,
    /// Buffers per lane, 2..=16.
    pub buffers: usize,
}

impl Default for StagingParams {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(4, |n| n.get());
        StagingParams {
            threads: (cpus * 3 / 4).clamp(1, 12),
            chunk: 4 << 20,
            buffers: 2,
        }
    }
}

impl StagingParams {
    /// Parses `"threads,chunk_bytes,buffers"` (chunk_bytes as in the other size
    /// variables: decimal or 0x hex, k/m/g suffixes), validated against the bounds of
    /// the fields and 4 GiB of buffers in all.
    pub fn parse(s: &str) -> std::result::Result<StagingParams, String> {
        let f: Vec<&str> = s.split(',').map(str::trim).collect();
        let [t, c, b] = f[..] else {
            return Err("want threads,chunk_bytes,buffers".into());
        };
        let threads = t
            .parse::<usize>()
            .ok()
            .filter(|t| (1..=64).contains(t))
            .ok_or("threads must be 1..64")?;
        let chunk = parse_size(c)
            .filter(|c| ((64 << 10)..=(256 << 20)).contains(c))
            .ok_or("chunk_bytes must be 64k..256m")?
            .next_multiple_of(4096);
        let buffers = b
            .parse::<usize>()
            .ok()
            .filter(|b| (2..=16).contains(b))
            .ok_or("buffers must be 2..16")?;
        if threads * buffers * chunk > 4 << 30 {
            return Err("more than 4 GiB of staging buffers".into());
        }
        Ok(StagingParams {
            threads,
            chunk,
            buffers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_parse_and_validate() {
        assert_eq!(
            StagingParams::parse("8,8m,3"),
            Ok(StagingParams {
                threads: 8,
                chunk: 8 << 20,
                buffers: 3
            })
        );
        assert_eq!(
            StagingParams::parse(" 1 , 65537 , 2 ").map(|p| p.chunk),
            Ok(65536 + 4096)
        );
        for bad in [
            "",
            "4",
            "4,4m",
            "4,4m,2,1",
            "0,4m,2",
            "65,4m,2",
            "4,1k,2",
            "4,1g,2",
            "4,4m,1",
            "4,4m,17",
            "64,256m,16",
            "x,4m,2",
        ] {
            assert!(StagingParams::parse(bad).is_err(), "{bad:?}");
        }
    }
}
