//! Describe the files named on the command line: `cargo run -p
//! codeloop-inputs --example describe -- FILE...`.

fn main() {
    for arg in std::env::args().skip(1) {
        match codeloop_inputs::describe(std::path::Path::new(&arg)) {
            Ok(d) => println!("{}\n", d.render()),
            Err(r) => println!("refused: {r}\n"),
        }
    }
}
