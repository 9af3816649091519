//! Logging and tracing: a `tracing-subscriber` registry with a text or JSON formatter on stderr,
//! filtered by the directives of `--log-level`, else `RUST_LOG`, else `info` (a `Targets` filter
//! for a plain `target=level` list, an `EnvFilter` otherwise), and — with the cargo feature
//! `otel` and `--otlp-endpoint URL` — an OpenTelemetry layer exporting spans over OTLP/HTTP
//! (protobuf) with a batch processor.
//!
//! Every front request runs in a `request` span ([`request_span`], target
//! `mcp_mrtr_proxy::request`, debug level in the log, always exported) carrying the method, the
//! JSON-RPC id, the front and the principal's digest label (never a credential); the engine's
//! spans (`call`, lanes) nest under it.

use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::Layer as _;

use crate::request::FrontRequest;

/// The `--log-format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (ANSI colours when stderr is a terminal)
    #[default]
    Text,
    /// One JSON object per line, with the current span and its parents' fields
    Json,
}

/// What [`init`] needs (from `config::Args`).
#[derive(Debug, Clone, Default)]
pub struct TelemetrySettings {
    pub log_format: LogFormat,
    /// An `EnvFilter` directive; `None`: `RUST_LOG`, else `info`.
    pub log_level: Option<String>,
    /// OTLP/HTTP endpoint: a base URL (`http://collector:4318`, `/v1/traces` is appended) or the
    /// full traces URL.
    pub otlp_endpoint: Option<String>,
}

/// Keeps the exporter alive; dropping it flushes and shuts the exporter down. Drop it outside
/// the async runtime (the exporter's HTTP client is blocking).
#[derive(Debug, Default)]
pub struct TelemetryGuard {
    #[cfg(feature = "otel")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(provider) = self.provider.take() {
            if let Err(error) = provider.shutdown() {
                eprintln!("warning: flushing the OpenTelemetry exporter failed: {error}");
            }
        }
    }
}

type Base = tracing_subscriber::Registry;
type BoxedLayer = Box<dyn tracing_subscriber::Layer<Base> + Send + Sync>;

/// The target of the per-request span ([`request_span`]).
pub const REQUEST_TARGET: &str = "mcp_mrtr_proxy::request";

/// The span of one front request. `debug` level: formatting its fields for the log cost 8.7 % of
/// a pass-through call's instructions (bench/PROXY.md), so the log shows it only when asked for
/// (`--log-level info,mcp_mrtr_proxy::request=debug`); the OTLP exporter always gets it.
pub fn request_span(request: &FrontRequest, front: &'static str) -> tracing::Span {
    tracing::debug_span!(
        target: REQUEST_TARGET,
        "request",
        otel.name = %request.method,
        otel.kind = "server",
        method = %request.method,
        request_id = %request.id,
        principal = %request.principal.display_label(),
        front,
    )
}

/// Installs the global subscriber. Errors: a bad filter, `--otlp-endpoint` in a build without
/// the `otel` feature, or an exporter that cannot be built.
pub fn init(settings: &TelemetrySettings) -> anyhow::Result<TelemetryGuard> {
    let directives = match &settings.log_level {
        Some(level) => {
            tracing_subscriber::EnvFilter::try_new(level)
                .map_err(|error| anyhow::anyhow!("invalid --log-level `{level}`: {error}"))?;
            level.clone()
        }
        None => std::env::var(tracing_subscriber::EnvFilter::DEFAULT_ENV)
            .ok()
            .filter(|value| tracing_subscriber::EnvFilter::try_new(value).is_ok())
            .unwrap_or_else(|| "info".to_owned()),
    };
    if settings.otlp_endpoint.is_none() {
        // The log alone: its filter is the subscriber's. A per-layer filter would cost more each
        // time a span is entered or left (bench/proxy-vs-nginx.md) and filter nothing more. A
        // list of `target=level` directives (the usual case: `info`, `info,hyper=warn`) is a
        // `Targets` filter, which decides once per callsite; an `EnvFilter` also takes a read
        // lock each time a span is entered or left. Directives naming spans or fields need the
        // `EnvFilter`.
        let installed = match target_list(&directives) {
            Some(targets) => tracing_subscriber::registry()
                .with(targets)
                .with(formatter(settings.log_format))
                .try_init(),
            None => tracing_subscriber::registry()
                .with(tracing_subscriber::EnvFilter::new(&directives))
                .with(formatter(settings.log_format))
                .try_init(),
        };
        return installed
            .map(|()| TelemetryGuard::default())
            .map_err(|error| anyhow::anyhow!("could not install the log subscriber: {error}"));
    }
    let log_filter = tracing_subscriber::EnvFilter::new(&directives);
    // Per-layer filters: the log and the exporter may want different spans.
    #[allow(unused_mut)]
    let mut layers: Vec<BoxedLayer> = vec![formatter(settings.log_format)
        .with_filter(log_filter)
        .boxed()];
    #[allow(unused_mut)]
    let mut guard = TelemetryGuard::default();
    if let Some(endpoint) = &settings.otlp_endpoint {
        #[cfg(feature = "otel")]
        {
            let (layer, provider) = otel::layer(endpoint)?;
            let export_filter =
                tracing_subscriber::EnvFilter::new(format!("{directives},{REQUEST_TARGET}=debug"));
            layers.push(layer.with_filter(export_filter).boxed());
            guard.provider = Some(provider);
        }
        #[cfg(not(feature = "otel"))]
        anyhow::bail!(
            "--otlp-endpoint {endpoint}: this mcp-mrtr-proxy was built without OpenTelemetry \
             support; rebuild it with `--features otel` (e.g. `cargo install mcp-mrtr-proxy \
             --features otel`) or drop --otlp-endpoint"
        );
    }
    tracing_subscriber::registry()
        .with(layers)
        .try_init()
        .map_err(|error| anyhow::anyhow!("could not install the log subscriber: {error}"))?;
    Ok(guard)
}

/// `directives` as a `Targets` filter when they are a plain list of `target=level` (no span or
/// field filter: `Targets` would read `[span]` as a target name, and ignores fields).
fn target_list(directives: &str) -> Option<tracing_subscriber::filter::Targets> {
    if directives.contains(['[', ']', '{', '}']) {
        return None;
    }
    directives.parse().ok()
}

/// The log's formatter on stderr, unfiltered.
fn formatter<S>(format: LogFormat) -> Box<dyn tracing_subscriber::Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_writer(std::io::stderr)
            .boxed(),
    }
}

/// The traces URL for an `--otlp-endpoint` value: a base URL gets `/v1/traces` appended.
pub fn traces_url(endpoint: &str) -> String {
    let trimmed = endpoint.trim_end_matches('/');
    if trimmed.ends_with("/v1/traces") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1/traces")
    }
}

#[cfg(feature = "otel")]
mod otel {
    use anyhow::Context as _;
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig as _};

    use super::{Base, BoxedLayer};

    pub(super) fn layer(
        endpoint: &str,
    ) -> anyhow::Result<(BoxedLayer, opentelemetry_sdk::trace::SdkTracerProvider)> {
        let url = super::traces_url(endpoint);
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            anyhow::bail!("--otlp-endpoint {endpoint}: expected an http:// or https:// URL");
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url.clone())
            .build()
            .with_context(|| format!("could not build the OTLP exporter for {url}"))?;
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(
                opentelemetry_sdk::Resource::builder()
                    .with_service_name("mcp-mrtr-proxy")
                    .build(),
            )
            .build();
        let tracer = provider.tracer("mcp-mrtr-proxy");
        let layer: BoxedLayer =
            Box::new(tracing_opentelemetry::layer::<Base>().with_tracer(tracer));
        Ok((layer, provider))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_urls() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://127.0.0.1:4318/"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://c:4318/v1/traces"),
            "http://c:4318/v1/traces"
        );
    }

    /// The events a filter lets through, of a fixed set across targets and levels.
    fn let_through<F>(filter: F) -> Vec<&'static str>
    where
        F: tracing_subscriber::Layer<Base> + Send + Sync + 'static,
    {
        use std::sync::{Arc, Mutex};
        struct Seen(Arc<Mutex<Vec<&'static str>>>);
        impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Seen {
            fn on_event(
                &self,
                event: &tracing::Event<'_>,
                _: tracing_subscriber::layer::Context<'_, S>,
            ) {
                self.0.lock().unwrap().push(event.metadata().name());
            }
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry()
            .with(filter)
            .with(Seen(seen.clone()));
        tracing::subscriber::with_default(subscriber, || {
            tracing::event!(name: "proxy-debug", target: "mcp_mrtr_proxy::engine", tracing::Level::DEBUG, "");
            tracing::event!(name: "proxy-info", target: "mcp_mrtr_proxy::engine", tracing::Level::INFO, "");
            tracing::event!(name: "request-debug", target: "mcp_mrtr_proxy::request", tracing::Level::DEBUG, "");
            tracing::event!(name: "hyper-info", target: "hyper::proto", tracing::Level::INFO, "");
            tracing::event!(name: "hyper-warn", target: "hyper::proto", tracing::Level::WARN, "");
            tracing::event!(name: "other-trace", target: "sled", tracing::Level::TRACE, "");
            tracing::event!(name: "other-error", target: "sled", tracing::Level::ERROR, "");
        });
        let seen = seen.lock().unwrap().clone();
        seen
    }

    #[test]
    fn target_lists_filter_as_the_env_filter_would() {
        for directives in [
            "info",
            "warn",
            "off",
            "trace",
            "info,mcp_mrtr_proxy::request=debug",
            "mcp_mrtr_proxy=debug",
            "debug,hyper=warn,sled=off",
            "hyper=info,mcp_mrtr_proxy::engine=DEBUG",
        ] {
            let targets = target_list(directives).expect("a target list");
            assert_eq!(
                let_through(targets),
                let_through(tracing_subscriber::EnvFilter::new(directives)),
                "{directives}"
            );
        }
        // Span and field directives are not target lists: they stay with the EnvFilter.
        for directives in [
            "info,[request]=debug",
            "mcp_mrtr_proxy[lane{lane=1}]=trace",
            "mcp_mrtr_proxy[{error}]=debug",
        ] {
            assert!(target_list(directives).is_none(), "{directives}");
        }
    }

    #[cfg(not(feature = "otel"))]
    #[test]
    fn otlp_without_the_feature_is_a_clear_error() {
        let error = init(&TelemetrySettings {
            otlp_endpoint: Some("http://127.0.0.1:4318".into()),
            ..TelemetrySettings::default()
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("--features otel"), "{error}");
    }
}
