//! The `ptxjit` command; see `ptxjit::cli` for its contract.

fn main() {
    let stdin = std::io::stdin();
    let code = ptxjit::cli::run(
        std::env::args_os().skip(1),
        &mut stdin.lock(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    std::process::exit(code);
}
