fn main() {
    for p in std::env::args().skip(1) {
        let t = std::fs::read_to_string(&p).unwrap();
        match ptxjit::frontend::parse(&t, &p) {
            Ok(m) => println!("{p}: ok, {} functions, {} instrs", m.functions.len(), m.functions.iter().map(|f| f.body.as_ref().map_or(0, |b| b.len())).sum::<usize>()),
            Err(e) => println!("{e}"),
        }
    }
}
