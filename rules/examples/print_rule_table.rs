//! Prints the README's rule table: `cargo run -p mcp-migrate-rules --example print_rule_table`.

fn main() {
    print!("{}", mcp_migrate_rules::markdown_table());
}
