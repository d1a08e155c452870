//! What the benchmark binaries share: the machine line every run prints first, and percentiles.

use std::time::Duration;

/// Prints the machine the figures come from: CPU model, logical CPUs, whether it is a virtual machine, the kernel.
pub fn machine() {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let hypervisor = cpuinfo.contains(" hypervisor");
    println!(
        "machine: {model}, {} logical CPUs{}, {} {}, kernel {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        if hypervisor { " (virtual machine)" } else { "" },
        std::env::consts::OS,
        std::env::consts::ARCH,
        kernel.trim()
    );
}

/// The `q` quantile (0.0 to 1.0, nearest rank) of `sorted`, which must be sorted; `None` when it is empty.
pub fn quantile(sorted: &[Duration], q: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    Some(sorted[((sorted.len() - 1) as f64 * q).round() as usize])
}

/// `d` in milliseconds, two decimals below 10 ms, one below 1 s, none above.
pub fn millis(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.2}")
    } else if ms < 1000.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.0}")
    }
}
