//! The Python front-end over source strings: each rule's shapes, and the look-alikes that must
//! stay silent.

use super::*;

/// `(line, rule name)` of each finding of `source`, in order.
fn findings(source: &str) -> Vec<(usize, &'static str)> {
    let file = SourceFile::new("server.py".into(), source.to_owned());
    let mut out: Vec<_> = lint_file(&file)
        .iter()
        .map(|d| (d.location().line, d.rule().name))
        .collect();
    out.sort();
    out
}

const FASTMCP: &str = "from mcp.server.fastmcp import FastMCP, Context\nmcp = FastMCP(\"demo\")\n";

fn with_fastmcp(body: &str) -> Vec<(usize, &'static str)> {
    findings(&format!("{FASTMCP}{body}"))
        .into_iter()
        .map(|(line, rule)| (line - 2, rule))
        .collect()
}

#[test]
fn context_methods_of_a_parameter_typed_context() {
    let body = "\
@mcp.tool()
async def book(city: str, ctx: Context) -> str:
    answer = await ctx.elicit(message=\"Which date?\", schema=Dates)
    await ctx.info(\"booking\")
    await ctx.log(\"debug\", \"x\")
    roots = await ctx.list_roots()
    reply = await ctx.session.create_message(messages=[], max_tokens=10)
    other = await ctx.request_context.session.list_roots()
    return ''
";
    assert_eq!(
        with_fastmcp(body),
        [
            (3, "server-initiated-request"),
            (4, "deprecated-logging"),
            (5, "deprecated-logging"),
            (6, "deprecated-roots"),
            (6, "server-initiated-request"),
            (7, "deprecated-sampling"),
            (7, "server-initiated-request"),
            (8, "deprecated-roots"),
            (8, "server-initiated-request"),
        ]
    );
}

#[test]
fn aliases_subscripted_and_string_annotations_resolve() {
    let source = "\
from mcp.server.fastmcp import Context as Ctx
from mcp.server.session import ServerSession
import fastmcp

async def a(ctx: Ctx[ServerSession, None]):
    await ctx.warning(\"w\")

async def b(ctx: \"fastmcp.Context\"):
    await ctx.sample(\"summarise\")

async def c(ctx: Ctx | None = None):
    await ctx.debug(\"d\")

async def d(session: ServerSession):
    await session.send_log_message(level=\"info\", data=\"x\")
";
    assert_eq!(
        findings(source),
        [
            (6, "deprecated-logging"),
            (9, "deprecated-sampling"),
            (9, "server-initiated-request"),
            (12, "deprecated-logging"),
            (15, "deprecated-logging"),
        ]
    );
}

#[test]
fn receivers_reached_through_self_and_get_context() {
    let source = "\
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context
from mcp.server.lowlevel import Server

server = Server(\"low\")

class Tools:
    async def run(self):
        return await self.context.session.create_message(messages=[], max_tokens=5)

async def helper():
    ctx = get_context()
    await ctx.error(\"boom\")

@server.call_tool()
async def call(name, arguments):
    roots = await server.request_context.session.list_roots()
";
    assert_eq!(
        findings(source),
        [
            (9, "deprecated-sampling"),
            (9, "server-initiated-request"),
            (13, "deprecated-logging"),
            (17, "deprecated-roots"),
            (17, "server-initiated-request"),
        ]
    );
}

#[test]
fn a_request_built_first_and_sent_later() {
    let source = "\
import mcp.types as types

async def ask(session):
    request = types.ServerRequest(types.CreateMessageRequest(method=\"sampling/createMessage\", params=params))
    result = await session.send_request(request, types.CreateMessageResult)
";
    assert_eq!(
        findings(source),
        [
            (4, "deprecated-sampling"),
            (5, "deprecated-sampling"),
            (5, "server-initiated-request"),
        ]
    );
}

#[test]
fn handlers_decorators_and_request_handler_keys() {
    let source = "\
from mcp.server.lowlevel import Server
from mcp import types

app = Server(\"x\")

@app.set_logging_level()
async def set_level(level): ...

@app.subscribe_resource()
async def subscribe(uri): ...

@app.unsubscribe_resource()
async def unsubscribe(uri): ...

app.request_handlers[types.SubscribeRequest] = subscribe
app.notification_handlers[types.RootsListChangedNotification] = changed
modern = Server(\"y\", on_set_logging_level=set_level)
";
    assert_eq!(
        findings(source),
        [
            (6, "deprecated-logging"),
            (9, "legacy-resource-subscription"),
            (12, "legacy-resource-subscription"),
            (15, "legacy-resource-subscription"),
            (16, "deprecated-roots"),
            (17, "deprecated-logging"),
        ]
    );
}

#[test]
fn include_context_values_have_an_unsafe_fix() {
    let source = "\
from mcp.server.fastmcp import Context

async def t(ctx: Context):
    await ctx.session.create_message(messages=[], max_tokens=1, include_context='thisServer')
    body = {\"includeContext\": \"allServers\"}
    fine = {\"includeContext\": \"none\"}
";
    let file = SourceFile::new("s.py".into(), source.to_owned());
    let diagnostics = lint_file(&file);
    let include: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.rule == RuleId::DeprecatedIncludeContext)
        .collect();
    assert_eq!(include.len(), 2);
    let fixes: Vec<_> = include
        .iter()
        .map(|d| d.fix.as_ref().expect("a fix"))
        .collect();
    assert!(fixes
        .iter()
        .all(|fix| fix.applicability == crate::fix::Applicability::Unsafe));
    let (fixed, applied) = crate::fix::apply(source, fixes);
    assert_eq!(applied, 2);
    assert!(fixed.contains("include_context='none'"));
    assert!(fixed.contains("{\"includeContext\": \"none\"}"));
    assert!(parses(&fixed));
    let again = SourceFile::new("s.py".into(), fixed);
    assert!(lint_file(&again)
        .iter()
        .all(|d| d.rule != RuleId::DeprecatedIncludeContext));
}

#[test]
fn url_elicitation_error_code_and_completion() {
    let source = "\
from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp.types import ErrorData

async def tool(ctx):
    await ctx.session.send_elicit_complete(elicitation_id)
    raise UrlElicitationRequiredError([])

def error():
    return ErrorData(code=-32042, message=\"needs a URL\")
";
    assert_eq!(
        findings(source),
        [
            (5, "elicitation-complete-notification"),
            (6, "server-initiated-request"),
            (9, "server-initiated-request"),
        ]
    );
}

#[test]
fn sse_transports_literal_positional_and_static() {
    let source = "\
from mcp.server.fastmcp import FastMCP
from mcp.server.sse import SseServerTransport
import fastmcp

server = FastMCP(\"s\")
other = fastmcp.FastMCP(\"o\")
TRANSPORT = \"sse\"

def main(transport: str = \"stdio\"):
    server.run(transport=\"sse\")
    server.run(\"sse\")
    other.run(transport=TRANSPORT)
    app = server.sse_app()
    asgi = other.http_app(transport=\"sse\")
    server.run(transport=transport)
    sse = SseServerTransport(\"/messages/\")
    server.run(transport=\"streamable-http\")
";
    assert_eq!(
        findings(source),
        [
            (10, "legacy-sse-transport"),
            (11, "legacy-sse-transport"),
            (12, "legacy-sse-transport"),
            (13, "legacy-sse-transport"),
            (14, "legacy-sse-transport"),
            (16, "legacy-sse-transport"),
        ]
    );
}

#[test]
fn a_parameter_default_of_sse_is_known_statically() {
    let source = "\
from fastmcp import FastMCP
mcp = FastMCP(\"x\")
def main(transport=\"sse\"):
    mcp.run(transport=transport)
";
    assert_eq!(findings(source), [(4, "legacy-sse-transport")]);
}

#[test]
fn an_import_is_reported_only_without_a_use() {
    let only_import = "from mcp.server.sse import SseServerTransport\n";
    assert_eq!(findings(only_import), [(1, "legacy-sse-transport")]);
    let module = "import mcp.server.sse\n";
    assert_eq!(findings(module), [(1, "legacy-sse-transport")]);
}

#[test]
fn secrets_in_forms_and_insecure_urls() {
    let source = "\
from pydantic import BaseModel
from mcp.server.fastmcp import Context

class Login(BaseModel):
    username: str
    api_key: str

class Pick(BaseModel):
    colour: str

async def tool(ctx: Context):
    await ctx.elicit(message=\"Sign in\", schema=Login)
    await ctx.elicit(\"Colour?\", Pick)
    await ctx.session.elicit(\"x\", {\"type\": \"object\", \"properties\": {\"password\": {\"type\": \"string\"}}})
    await ctx.elicit_url(\"Open\", \"http://example.com/auth\", \"id-1\")
    await ctx.elicit_url(\"Open\", f\"https://example.com/cb?token={token}\", \"id-2\")
    await ctx.elicit_url(\"Open\", \"https://example.com/ok\", \"id-3\")
";
    assert_eq!(
        findings(source),
        [
            (6, "form-elicitation-secret"),
            (12, "server-initiated-request"),
            (13, "server-initiated-request"),
            (14, "form-elicitation-secret"),
            (14, "server-initiated-request"),
            (15, "insecure-elicitation-url"),
            (15, "server-initiated-request"),
            (16, "insecure-elicitation-url"),
            (16, "server-initiated-request"),
            (17, "server-initiated-request"),
        ]
    );
}

#[test]
fn hand_built_notifications() {
    let source = "\
from mcp.server.session import ServerSession

async def log(session: ServerSession):
    await session.send_notification({\"jsonrpc\": \"2.0\", \"method\": \"notifications/message\", \"params\": {}})
    await raw.send(method=\"notifications/elicitation/complete\")
";
    assert_eq!(
        findings(source),
        [
            (4, "deprecated-logging"),
            (5, "elicitation-complete-notification"),
        ]
    );
}

#[test]
fn look_alikes_stay_silent() {
    let source = "\
\"\"\"Calls ctx.elicit( and ctx.session.create_message( in prose; notifications/message.\"\"\"
import logging
from mcp.server.fastmcp import FastMCP, Context
from mcp.server.mcpserver import Elicit, Resolve, Sample
from mcp.types import InputRequiredResult, ElicitRequest

logger = logging.getLogger(__name__)
mcp = FastMCP(\"x\")

class Lsp:
    def create_message(self, method, params):
        return {\"method\": method}

# await ctx.elicit(\"commented out\")
async def tool(ctx: Context, lsp: Lsp, other):
    logger.info(\"hello\")
    logging.warning(\"careful\")
    lsp.create_message(\"textDocument/hover\", {})
    other.info(\"not a context\")
    other.elicit(\"not a context\")
    text = \"use ctx.sample( and run(transport='sse')\"
    await ctx.report_progress(1, 2)
    return InputRequiredResult(input_requests={\"date\": ElicitRequest(params=p)}, request_state=s)

async def ask() -> Elicit[Login]:
    return Elicit(\"Sign in?\", Login)

def main(args):
    mcp.run(transport=args.transport)
    uvicorn.run(app, host=\"0.0.0.0\")
";
    assert_eq!(findings(source), []);
}

#[test]
fn without_the_sdk_common_names_stay_silent() {
    let source = "\
class Session:
    async def create_message(self): ...

async def f(ctx, self_session):
    await ctx.session.create_message()
    await ctx.info(\"x\")
    await client.send_log_message(\"x\")
    app.run(transport=\"sse\")
";
    assert_eq!(findings(source), []);
}

#[test]
fn a_syntax_error_is_one_unparsable_file_finding() {
    let source = "from mcp.server.fastmcp import Context\ndef broken(:\n    pass\n";
    let file = SourceFile::new("broken.py".into(), source.to_owned());
    let diagnostics = lint_file(&file);
    assert_eq!(diagnostics.len(), 1);
    let diagnostic = &diagnostics[0];
    assert_eq!(diagnostic.rule, RuleId::UnparsableFile);
    assert_eq!(diagnostic.location().line, 2);
    assert!(
        diagnostic
            .message
            .starts_with("could not parse this file as Python: "),
        "{}",
        diagnostic.message
    );
    assert!(!parses(source));
}

#[test]
fn stub_files_are_skipped() {
    let file = SourceFile::new(
        "types.pyi".into(),
        "from mcp.server.sse import SseServerTransport\n".into(),
    );
    assert!(lint_file(&file).is_empty());
}

#[test]
fn deep_nesting_and_odd_input_never_crash() {
    let deep = format!("x = {}1{}\n", "(".repeat(5000), ")".repeat(5000));
    let chain = format!("x = 1{}\n", " + 1".repeat(20000));
    let attributes = format!("from mcp import types\nx = types{}\n", ".a".repeat(20000));
    let calls = format!(
        "from mcp.server.fastmcp import Context\nx = {}y{}\n",
        "f(".repeat(3000),
        ")".repeat(3000)
    );
    let annotation = format!(
        "from mcp.server.fastmcp import Context\ndef f(ctx: int{}):\n    ctx.info(1)\n",
        " | int".repeat(20000)
    );
    for source in [
        annotation.as_str(),
        deep.as_str(),
        chain.as_str(),
        calls.as_str(),
        attributes.as_str(),
        "",
        "\u{feff}import mcp\n",
        "x = '\\N{BAD NAME}'\n",
        "\0\0\0",
    ] {
        let file = SourceFile::new("odd.py".into(), source.to_owned());
        let _ = lint_file(&file);
    }
}

/// Each rule page's Python example (`### Python` of `## Example`) reports its rule, with the
/// imports the snippet leaves out. A page whose Python section has no code block says the rule is
/// not checked in Python yet.
#[test]
fn every_rule_pages_python_example_reports_its_rule() {
    const PRELUDE: &str = "from mcp import types\n\
        from mcp.server.fastmcp import Context, FastMCP\n\
        from mcp.server.lowlevel import Server\n\
        from mcp.types import SamplingMessage, TextContent\n\
        from pydantic import BaseModel\n\
        mcp = FastMCP(\"example\")\n\
        server = Server(\"example\")\n\
        app = server\n";
    let mut checked = 0;
    for rule in mcp_migrate_rules::RULES {
        let Some(start) = rule.docs.find("### Python") else {
            panic!("{}: no Python example", rule.name);
        };
        let rest = &rule.docs[start + "### Python".len()..];
        let end = [rest.find("\n### "), rest.find("\n## ")]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
        let section = &rest[..end];
        let Some(open) = section.find("```") else {
            continue;
        };
        let language = section[open + 3..].split_whitespace().next().unwrap();
        let body_start = open + section[open..].find('\n').unwrap() + 1;
        let body = &section[body_start..body_start + section[body_start..].find("```").unwrap()];
        let diagnostics = if language == "text" {
            let file = SourceFile::new("requirements.txt".into(), body.to_owned());
            manifest::lint_requirements(&file)
        } else {
            assert_eq!(language, "python", "{}", rule.name);
            let file = SourceFile::new("example.py".into(), format!("{PRELUDE}{body}"));
            let found = lint_file(&file);
            crate::suppress::apply(&file, crate::suppress::CommentStyle::Python, found, |_| {
                true
            })
            .kept
        };
        assert!(
            diagnostics.iter().any(|d| d.rule().name == rule.name),
            "{}: its Python example reports {:?}",
            rule.name,
            diagnostics
                .iter()
                .map(|d| d.rule().name)
                .collect::<Vec<_>>()
        );
        checked += 1;
    }
    assert!(checked >= 14, "only {checked} examples checked");
}
