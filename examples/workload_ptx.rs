//! Prints the PTX of a benchmark workload (for `ptxjit ... --emit asm`).
//!
//! cargo run --release --example workload_ptx -- mont256_u32 > mont256.ptx

#[path = "../benches/workloads/mod.rs"]
mod workloads;

fn main() {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "mul256_u32".into());
    let w = workloads::all()
        .into_iter()
        .find(|w| w.name == name)
        .unwrap_or_else(|| panic!("no workload `{name}`"));
    print!("{}", workloads::ptx(&w));
}
