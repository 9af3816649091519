use super::*;

/// The statements of `text`, as their texts.
fn pieces(text: &str) -> Vec<&str> {
    split(text)
        .expect("the lexer is sure")
        .iter()
        .map(|statement| &text[statement.start..statement.end])
        .collect()
}

#[test]
fn splits_at_semicolons_line_breaks_and_blocks() {
    assert_eq!(
        pieces("const a = 1;\nlet b = a\nfoo(b)\nfunction f() { return 1 }g();"),
        [
            "const a = 1;",
            "let b = a",
            "foo(b)",
            "function f() { return 1 }",
            "g();"
        ]
    );
    // Minified: statements after `;` and `}`.
    assert_eq!(
        pieces("var a=1,b=2;function c(){}var d=y((e,t)=>{t.x=1});"),
        ["var a=1,b=2;", "function c(){}", "var d=y((e,t)=>{t.x=1});"]
    );
}

#[test]
fn keeps_what_continues_together() {
    // A line break that does not end the expression, `else`, `catch`, a do-while, `from`.
    for text in [
        "const a = b\n  (c)",
        "const a = b\n  .c()",
        "const a = b\n  + c",
        "const a = b\n  `tagged`",
        "if (a) b();\nelse c();",
        "if (a) { b() }\nelse { c() }",
        "try { a() } catch (e) { b() } finally { c() }",
        "do a(); while (b)",
        "do { a() } while (b)",
        "import {\n  a\n} from \"m\"",
        "const a = typeof\n  b",
        "export default\nfoo",
        "if (a)\n  b()",
        "for (const x of y)\n  z(x)",
        "@decorator\nclass A {}",
        "const a = b as\n  C",
        "const f = () =>\n  g()",
    ] {
        assert_eq!(pieces(text), [text], "{text}");
    }
}

#[test]
fn strings_templates_comments_and_regexes_hide_their_contents() {
    let text = "const a = \"; } {\";\nconst b = `x ${ { c: \"}\" } } ; ${`${d}`}`;\n// ; {\n/* } ; */\nconst e = /[/;}]+\\/;/g.test(f);\nconst g = h / 2 / i;";
    assert_eq!(
        pieces(text),
        [
            "const a = \"; } {\";",
            "const b = `x ${ { c: \"}\" } } ; ${`${d}`}`;",
            "const e = /[/;}]+\\/;/g.test(f);",
            "const g = h / 2 / i;",
        ]
    );
    // After `)` of a condition a `/` starts a regular expression; after a call's, a division.
    assert_eq!(
        pieces("if (a) /}/.test(b);\nx = f(a) / 2; y = \"}\";"),
        ["if (a) /}/.test(b);", "x = f(a) / 2;", "y = \"}\";"]
    );
    // A keyword as a property name is a name: `/` after it divides.
    assert_eq!(
        pieces("x = a.return / 2; y = 1 / b.typeof; z = '}'"),
        ["x = a.return / 2;", "y = 1 / b.typeof;", "z = '}'"]
    );
    // TypeScript's non-null assertion before a division.
    assert_eq!(pieces("x = a! / 2; y = '}'"), ["x = a! / 2;", "y = '}'"]);
}

#[test]
fn is_unsure_where_the_lexer_cannot_tell() {
    for text in [
        // `}` or `++` before `/`.
        "function f() {}\n/a/.test(b)",
        "a++ / 2",
        // Unbalanced, unterminated.
        "const a = (b;",
        "const a = \"b\nc\";",
        "const a = /b\nc/;",
        "const a = `b",
        "/* a",
        // A name spelled with an escape, a blank we do not know, HTML-like comments.
        "const \\u0061 = 1;",
        "const\u{a0}a = 1;",
        "a = 1;\n<!-- b\n",
        "a = 1;\n--> b\n",
        "a\u{2028}b",
        // `of`, `await`: keyword or name.
        "for (x of /a/g.exec(b)) {}",
    ] {
        assert!(split(text).is_none(), "{text:?}");
    }
}

#[test]
fn imports_and_directives_are_marked() {
    let statements = split(
        "\"use strict\";\nimport a from \"b\";\nimport(\"c\");\nimported();\nimport.meta.url;",
    )
    .unwrap();
    let marks: Vec<(bool, bool)> = statements
        .iter()
        .map(|statement| (statement.import, statement.directive))
        .collect();
    assert_eq!(
        marks,
        [
            (false, true),
            (true, false),
            (false, false),
            (false, false),
            (false, false)
        ]
    );
}

#[test]
fn masking_keeps_offsets_lines_and_semicolons() {
    let text = "import { Server as S } from \"@modelcontextprotocol/sdk/server/index.js\";\nfunction helper() {\n  return 1;\n}\nconst s = new S(info);\nvar a = 1;\n(b)();\nfoo.logging = {};\nconst tail = 2;\n";
    let masked = mask(text).expect("something is skipped");
    assert_eq!(masked.text.len(), text.find("\nconst tail").unwrap());
    for (original, blanked) in text.lines().zip(masked.text.lines()) {
        assert_eq!(original.len(), blanked.len());
    }
    // The alias of the SDK's `Server` keeps `new S(..)`; `helper` and `var a` are blanked but
    // `var a`'s `;` stays, so `(b)()` is not read as a call of `1`.
    assert!(masked.text.contains("const s = new S(info);"));
    assert!(!masked.text.contains("helper"));
    assert!(masked.text.contains("\n         ;\n"));
    assert!(!masked.text.contains("(b)"));
    assert!(masked.text.contains("foo.logging = {};"));
    assert_eq!(masked.sdk_names, ["S", "Server"]);
    assert!(masked.skipped_mention(text, "helper"));
    assert!(!masked.skipped_mention(text, "help"));
}

#[test]
fn required_sdk_names_keep_their_statements() {
    let text = "const { Server: Srv } = require(\"@modelcontextprotocol/sdk/server/index.js\");\nconst sdk = await import('@modelcontextprotocol/sdk/types.js');\nfunction a() { return new Srv(x) }\nfunction b() { return sdk.thing }\nfunction c() { return 1 }\n";
    let masked = mask(text).expect("c is skipped");
    assert_eq!(masked.sdk_names, ["Server", "Srv", "sdk"]);
    assert!(masked.text.contains("new Srv(x)"));
    assert!(masked.text.contains("sdk.thing"));
    assert!(!masked.text.contains("function c"));
}

#[test]
fn every_hand_built_method_holds_a_word() {
    for (method, _, _) in crate::typescript::surface::METHODS {
        assert!(keep::words().any(|word| method.contains(word)), "{method}");
    }
}
