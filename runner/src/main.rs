fn main() {
    println!("orrery");
}
