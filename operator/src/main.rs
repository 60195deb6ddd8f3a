fn main() {
    println!("orrery-operator");
}
