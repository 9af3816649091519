//! The TypeScript front-end on small inputs: syntax errors, pathological nesting, comments.

use super::*;

fn lint(name: &str, text: &str) -> Vec<(usize, usize, RuleId, String)> {
    let file = SourceFile::new(name.into(), text.to_owned());
    lint_file(&file)
        .iter()
        .map(|d| {
            let location = d.location();
            (location.line, location.column, d.rule, d.message.clone())
        })
        .collect()
}

#[test]
fn a_syntax_error_is_unparsable_file_with_the_parsers_message_and_position() {
    let found = lint(
        "server.ts",
        "import { McpServer } from \"@modelcontextprotocol/sdk/server/mcp.js\";\nconst x = ;\n",
    );
    assert_eq!(found.len(), 1, "{found:?}");
    let (line, column, rule, message) = &found[0];
    assert_eq!((*line, *column, *rule), (2, 11, RuleId::UnparsableFile));
    assert!(
        message.starts_with("could not parse this file as TypeScript/JavaScript: "),
        "{message}"
    );
    // TypeScript syntax in a `.js` file is an error too; the same text as `.ts` is fine.
    let typed = "export function f(server: McpServer): void {}\n";
    assert_eq!(lint("a.js", typed)[0].2, RuleId::UnparsableFile);
    assert!(lint("a.ts", typed).is_empty());
}

#[test]
fn inputs_that_would_exhaust_the_stack_are_reported_not_parsed() {
    for text in [
        format!("const x = {}1{};", "(".repeat(100_000), ")".repeat(100_000)),
        format!("const x = {};", "[".repeat(100_000)),
        format!("const x = {}b;", "a.".repeat(100_000)),
        format!("const x = {}b;", "a.b().".repeat(100_000)),
    ] {
        let found = lint("deep.ts", &text);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].2, RuleId::UnparsableFile);
        assert!(found[0].3.contains("nest deeper"), "{}", found[0].3);
    }
    // Brackets inside strings, template literals, comments and regular expressions do not
    // count, and deep but reasonable nesting is linted.
    let fine = format!(
        "const s = \"{}\", t = `{}`, r = /\\(/; // {}\n/* {} */\nconst y = {}1{};\n",
        "(".repeat(1000),
        "[".repeat(1000),
        "{".repeat(1000),
        "(".repeat(1000),
        "(".repeat(200),
        ")".repeat(200)
    );
    assert!(lint("fine.ts", &fine).is_empty());
}

#[test]
fn the_depth_scan_skips_strings_to_their_end_and_survives_truncated_input() {
    // Escaped quotes and backslashes inside strings, a line ending an unterminated string.
    let text = format!(
        "const a = \"\\\"{}\", b = '\\\\', c = \"{}\nconst d = 1;\n",
        "(".repeat(300),
        "[".repeat(10)
    );
    assert_eq!(too_deep(&text), None);
    // The same brackets outside a string do count.
    assert!(too_deep(&format!("const a = {};", "(".repeat(300))).is_some());
    // Input that ends inside a string, a template or after a lone backslash.
    for text in [
        "const a = \"abc\\",
        "const a = `abc",
        "const a = '\\",
        "\\",
        "\"",
    ] {
        assert_eq!(too_deep(text), None, "{text:?}");
    }
}

#[test]
fn comments_are_those_the_parser_finds() {
    let text = "const a = \"// not a comment\"; // one\nconst b = `/* nor this */`; /* two */\n";
    let found: Vec<&str> = comments(Path::new("a.ts"), text)
        .into_iter()
        .map(|(start, end)| &text[start..end])
        .collect();
    assert_eq!(found, ["// one", "/* two */"]);
}

#[test]
fn the_pre_filter_lets_through_what_the_rules_read() {
    assert!(may_match(
        b"import x from \"@modelcontextprotocol/sdk/types.js\""
    ));
    assert!(may_match(b"const r = { method: \"roots/list\" }"));
    assert!(!may_match(
        b"export const add = (a: number, b: number) => a + b;"
    ));
}

/// Each rule page's TypeScript example (`### TypeScript` of `## Example`) reports its rule, with
/// the imports the snippet leaves out.
#[test]
fn every_rule_pages_typescript_example_reports_its_rule() {
    const PRELUDE: &str = "import { Server } from \"@modelcontextprotocol/sdk/server/index.js\";\n\
        import { RootsListChangedNotificationSchema, SubscribeRequestSchema } from \"@modelcontextprotocol/sdk/types.js\";\n\
        declare const app: any, z: any, service: string, elicitationId: string, watched: Set<string>, params: any;\n";
    let mut checked = 0;
    for rule in mcp_migrate_rules::RULES {
        let Some(start) = rule.docs.find("### TypeScript") else {
            panic!("{}: no TypeScript example", rule.name);
        };
        let section = &rule.docs[start..rule.docs.find("## Use instead").unwrap()];
        let Some(open) = section.find("```") else {
            continue; // Not checked in TypeScript yet: the page says so.
        };
        let body_start = open + section[open..].find('\n').unwrap() + 1;
        let body = &section[body_start..body_start + section[body_start..].find("```").unwrap()];
        let language = section[open + 3..].split_whitespace().next().unwrap();
        let diagnostics = if language == "json" {
            package_json::lint_file(&SourceFile::new("package.json".into(), body.to_owned()))
        } else {
            let text = if body.contains("import ") {
                body.to_owned()
            } else {
                format!("{PRELUDE}{body}")
            };
            let file = SourceFile::new("example.ts".into(), text);
            let found = lint_file(&file);
            crate::suppress::apply(&file, crate::suppress::CommentStyle::Script, found, |_| {
                true
            })
            .kept
        };
        assert!(
            diagnostics.iter().any(|d| d.rule.rule().name == rule.name),
            "{}: its TypeScript example reports {:?}",
            rule.name,
            diagnostics
                .iter()
                .map(|d| d.rule.rule().name)
                .collect::<Vec<_>>()
        );
        checked += 1;
    }
    assert_eq!(
        checked,
        mcp_migrate_rules::RULES.len(),
        "every rule page has a TypeScript example that reports its rule"
    );
}
