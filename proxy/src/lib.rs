//! `mcp-mrtr-proxy`: serves MCP 2026-07-28 clients from an unmodified legacy MCP server, turning
//! the legacy server's mid-call requests into Multi Round-Trip Request (MRTR) rounds.
//!
//! Module map (one concern each; data flow in ARCHITECTURE.md):
//! - [`front`]: the 2026-07-28 side (Streamable HTTP or stdio), validation, response sinks;
//! - [`engine`]: the translator: pass-through, MRTR rounds, pauses, deprecation warnings;
//! - [`backend`]: lanes (legacy sessions / child processes), the lane pool, legacy transports;
//! - [`state`]: sealing and opening `requestState`;
//! - [`request`]: the request types shared by the fronts and the engine;
//! - [`store`]: the pause store (trait; sled);
//! - [`cluster`]: retries passed between instances sharing a Redis store;
//! - [`refusals`]: the errors a retry gets when its `requestState` cannot resume a pause;
//! - [`capabilities`]: client capability profiles;
//! - [`legacy_session`]: legacy (`initialize`) client sessions, relayed to their own lanes;
//! - [`jsonrpc`]: JSON-RPC messages and error codes;
//! - [`config`]: flags and the TOML config file;
//! - [`metrics`]: Prometheus metrics (`GET /metrics`);
//! - [`telemetry`]: logs (text/JSON) and the optional OpenTelemetry exporter;
//! - `fuzzing` (hidden): entry points for the fuzz targets in `fuzz/`, not a stable API.

#![forbid(unsafe_code)]

/// A hash map with aHash (randomly keyed, so as resistant to collision floods as the standard
/// one) instead of SipHash, for the maps the proxy reads on every call: SipHash cost ~1.4k
/// instructions per pass-through call (callgrind, bench/proxy-vs-nginx.md).
pub type FastHashMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;

pub mod backend;
pub mod capabilities;
pub mod cluster;
pub mod config;
pub mod credentials;
pub mod engine;
pub mod front;
#[doc(hidden)]
pub mod fuzzing;
mod idle_clock;
mod json_spans;
pub mod jsonrpc;
pub mod jwt;
pub mod keyring;
pub mod legacy_session;
pub mod limits;
pub mod metrics;
pub mod param_headers;
pub mod params;
mod quiet_waker;
pub mod refusals;
pub mod request;
pub mod response_channel;
pub mod state;
pub mod store;
pub mod subscriptions;
pub mod telemetry;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};

/// Runs the proxy until SIGINT/SIGTERM (or EOF on the stdio front).
///
/// Shutdown (SIGTERM/SIGINT): the front stops accepting connections and no call may pause any
/// more; calls in flight get up to `--shutdown-grace` to finish; then every paused call is ended
/// (its legacy requests answered with cancel/an error, the legacy call cancelled, its record
/// marked `lost` so a retry after a restart is told so), the store is flushed, and the legacy
/// children are stopped and reaped (stdin closed, killed after 2 s).
pub async fn run(args: config::Args) -> anyhow::Result<()> {
    let spec = match (&args.upstream, args.command.split_first()) {
        (Some(url), None) => backend::BackendSpec::Http {
            url: url.clone(),
            transport: args.upstream_transport.into(),
        },
        (None, Some((program, rest))) => backend::BackendSpec::Stdio {
            program: program.clone(),
            args: rest.to_vec(),
        },
        (Some(_), Some(_)) => bail!("give either --upstream or a command after `--`, not both"),
        (None, None) => bail!("give the legacy server: --upstream URL, or `-- COMMAND [ARGS]...`"),
    };
    // Before anything is opened: a bad certificate is a start-up error.
    let tls = load_tls(&args)?;
    let default_pool = match spec {
        // Paused calls that need a session each (a server that sends mid-call requests on its
        // GET stream) hold one; lanes start on demand, so the bound costs nothing unused.
        backend::BackendSpec::Http { .. } => args.max_paused_calls.saturating_add(32),
        backend::BackendSpec::Stdio { .. } => 4,
    };
    check_exposure(&args)?;
    let jwt = jwt_verifier(&args).await?;
    let store = store::open(&args.store, args.advertise.as_deref())
        .await
        .with_context(|| format!("could not open the pause store {}", args.store))?;
    let lost = store.recover().await?;
    if lost > 0 {
        tracing::warn!(
            lost,
            "paused calls whose proxy is gone were lost; their retries will be refused"
        );
    }
    let keys = match (&args.state_key_file, std::env::var("MCP_MRTR_STATE_KEY")) {
        (Some(path), _) => read_keyring(path)?,
        (None, Ok(text)) => keyring::Keyring::single(
            state::StateKey::from_text(&text).context("invalid MCP_MRTR_STATE_KEY")?,
        ),
        (None, Err(_)) => keyring::Keyring::single(store.state_key().await?),
    };
    let sealer = state::Sealer::with_keyring(&keys);
    tracing::info!(keys = ?keys.ids(), "requestState keys loaded (the last seals)");
    drop(keys);
    let origin_rewrite = match (&spec, &args.public_url) {
        (backend::BackendSpec::Http { url, .. }, Some(public)) => {
            credentials::OriginRewrite::new(url, public)
        }
        _ => None,
    };
    let upstream_url = match &spec {
        backend::BackendSpec::Http { url, .. } => Some(url.clone()),
        backend::BackendSpec::Stdio { .. } => None,
    };
    let pools = backend::PrincipalPools::new(
        spec,
        backend::PoolSettings {
            max_lanes: args.pool_size.unwrap_or(default_pool).max(1),
            roots: args.roots.clone(),
            client_info: serde_json::json!({
                "name": "mcp-mrtr-proxy",
                "version": env!("CARGO_PKG_VERSION"),
            }),
            request_timeout: args.request_timeout,
            call_sessions: args.call_sessions,
            lane_idle_timeout: args.lane_idle_timeout,
            credentials: Default::default(),
            credentials_wanted: Arc::default(),
            paused_per_lane: args.max_paused_per_lane,
            spare_lanes: args.spare_lanes,
        },
        args.max_credential_pools,
        args.forward_credentials,
    );
    let engine = engine::Engine::new(
        pools.clone(),
        sealer.clone(),
        store,
        engine::EngineSettings {
            pause_ttl: args.pause_ttl,
            batch_window: args.batch_window,
            request_timeout: args.request_timeout,
            limits: limits::CallLimits {
                max_paused_calls: args.max_paused_calls,
                max_paused_per_principal: args.max_paused_per_principal,
                max_rounds: args.max_rounds,
                max_input_request_bytes: args.max_input_request_bytes,
                call_timeout: args.call_timeout,
            },
        },
    );
    engine.register_metrics();
    let shutdown = tokio_util::sync::CancellationToken::new();
    spawn_signal_handler(shutdown.clone());
    spawn_reloader(
        Reloadable {
            keyring: args.state_key_file.clone().map(|path| (path, sealer)),
            tls: tls.clone(),
        },
        shutdown.clone(),
    );
    spawn_sweeper(engine.clone(), args.pause_ttl, shutdown.clone());
    spawn_store_probe(engine.clone(), shutdown.clone());
    spawn_idle_lane_closer(pools.clone(), args.lane_idle_timeout, shutdown.clone());
    {
        // Draining from the moment shutdown starts: no call may pause any more, `/readyz` 503.
        let engine = engine.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            engine.begin_drain();
        });
    }
    {
        // Connect the first lane in the background: `/healthz` turns 200 when it is up (or
        // when the legacy server answered it 401/403: it is up and wants each caller's
        // credentials).
        let pool = pools.anonymous().clone();
        tokio::spawn(async move {
            if let Err(error) = pool.initialized().await {
                tracing::error!(%error, "the legacy server could not be initialized yet");
            }
        });
    }
    let legacy = legacy_session::LegacySessions::new(
        pools.clone(),
        legacy_session::LegacySettings {
            policy: args.era_policy,
            max_sessions: args.max_legacy_sessions.max(1),
            idle_timeout: args.legacy_session_idle_timeout,
        },
    );
    spawn_legacy_sweeper(legacy.clone(), shutdown.clone());
    {
        // Long-lived GET streams would hold their connections until the shutdown grace ends.
        let legacy = legacy.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            legacy.close_streams();
        });
    }
    let handler: Arc<dyn request::Handler> = engine.clone();
    if args.stdio {
        let stdin = tokio::io::BufReader::new(tokio::io::stdin());
        front::stdio::serve_stdio(
            stdin,
            tokio::io::stdout(),
            handler,
            Some(legacy.clone()),
            args.max_concurrent_requests,
            shutdown.clone(),
        )
        .await?;
    } else {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("could not listen on {}", args.listen))?;
        let address = listener.local_addr()?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        println!("listening on {scheme}://{address}/mcp");
        let resource_server = if args.require_auth {
            let public = args
                .public_url
                .clone()
                .unwrap_or_else(|| format!("{scheme}://{address}/mcp"));
            let server = front::protected_resource::ResourceServer::new(
                &public,
                args.authorization_servers.clone(),
                args.scopes.clone(),
            )
            .map_err(|why| anyhow::anyhow!(why))?;
            tracing::info!(resource = %public, "the proxy is the resource server (--require-auth)");
            Some(Arc::new(server))
        } else {
            None
        };
        let config = front::http::HttpFrontConfig {
            listen: address,
            allowed_origins: args.allowed_origins.clone(),
            allowed_hosts: args.allowed_hosts.clone(),
            max_body_bytes: args.max_body_bytes,
            max_header_bytes: args.max_header_bytes,
            max_headers: args.max_headers,
            header_read_timeout: args.header_read_timeout,
            body_read_timeout: args.body_read_timeout,
            max_concurrent_requests: args.max_concurrent_requests,
            shutdown_grace: args.shutdown_grace,
            legacy: Some(legacy.clone()),
            forward_headers: args.forward_headers.clone(),
            jwt: jwt.clone(),
            resource_server,
            discovery: upstream_url
                .as_deref()
                .and_then(|url| front::well_known::DiscoveryRelay::new(url, origin_rewrite.clone()))
                .map(Arc::new),
            origin_rewrite,
            tls,
            ..front::http::HttpFrontConfig::default()
        };
        front::http::serve(listener, config, handler, shutdown.clone()).await?;
    }
    let ended = engine.shutdown_pauses().await;
    tracing::info!(
        paused_calls_ended = ended,
        "stopping the legacy server lanes"
    );
    legacy.shutdown().await;
    pools.shutdown().await;
    tracing::info!("shut down");
    Ok(())
}

fn spawn_signal_handler(shutdown: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let Ok(mut terminate) = signal(SignalKind::terminate()) else {
                return;
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
        shutdown.cancel();
    });
}

/// The front's authentication flags, checked before anything starts: `--require-auth` needs
/// `--principal jwt` and an `--authorization-server`, on the HTTP front; a non-loopback listen
/// address needs `--require-auth` or `--allow-unauthenticated`.
fn check_exposure(args: &config::Args) -> anyhow::Result<()> {
    if args.require_auth {
        if args.stdio {
            bail!("--require-auth applies to the HTTP front, not --stdio");
        }
        if args.principal != jwt::PrincipalMode::Jwt {
            bail!("--require-auth needs --principal jwt with --jwks, --issuer and --audience (the proxy verifies the callers' tokens)");
        }
        if args.public_url.is_none() && !args.listen.ip().is_loopback() {
            bail!("--require-auth on a non-loopback address needs --public-url (the URL clients reach the proxy at: the resource named in its challenges and metadata)");
        }
        if args.authorization_servers.is_empty() {
            bail!("--require-auth needs --authorization-server URL (the issuer clients get their tokens from, listed in the proxy's protected-resource metadata)");
        }
    } else if !args.authorization_servers.is_empty() || !args.scopes.is_empty() {
        bail!(
            "--authorization-server and --scope apply to --require-auth only; add --require-auth"
        );
    }
    if !args.stdio
        && !args.listen.ip().is_loopback()
        && !args.require_auth
        && !args.allow_unauthenticated
    {
        bail!(
            "refusing to listen on {} (not a loopback address) without authentication: give \
             --require-auth (the proxy verifies each caller's token; see docs/proxy/deployment.md, \
             \"Authenticated servers\") or --allow-unauthenticated (the legacy server authenticates \
             its callers itself, or the network is trusted)",
            args.listen
        );
    }
    Ok(())
}

/// The verifier of `--principal jwt` (`None` under `digest`); a missing flag or an unreadable
/// JWKS file is a startup error.
async fn jwt_verifier(args: &config::Args) -> anyhow::Result<Option<Arc<jwt::JwtVerifier>>> {
    if args.principal != jwt::PrincipalMode::Jwt {
        for (flag, given) in [
            ("--jwks", args.jwks.is_some()),
            ("--issuer", args.issuer.is_some()),
            ("--audience", args.audience.is_some()),
        ] {
            if given {
                bail!("{flag} applies to --principal jwt only; add --principal jwt");
            }
        }
        return Ok(None);
    }
    let (Some(jwks), Some(issuer), Some(audience)) = (&args.jwks, &args.issuer, &args.audience)
    else {
        bail!("--principal jwt needs --jwks FILE|URL, --issuer ISSUER and --audience AUDIENCE");
    };
    let verifier = jwt::JwtVerifier::start(jwt::JwtSettings {
        jwks: jwks.clone(),
        issuer: issuer.clone(),
        audience: audience.clone(),
        refetch_interval: args.jwks_refetch_interval,
    })
    .await
    .map_err(|why| anyhow::anyhow!(why))?;
    Ok(Some(verifier))
}

/// Reads `--state-key-file`: a keyring, or a single key ([`keyring`]).
fn read_keyring(path: &std::path::Path) -> anyhow::Result<keyring::Keyring> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("could not read --state-key-file {}", path.display()))?;
    keyring::Keyring::from_text(&text)
        .with_context(|| format!("invalid --state-key-file {}", path.display()))
}

/// `--tls-cert` and `--tls-key`, loaded ([`front::tls`]): both or neither, HTTP front only.
fn load_tls(args: &config::Args) -> anyhow::Result<Option<Arc<front::tls::TlsFront>>> {
    Ok(match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) if !args.stdio => {
            if args.advertise.is_some() {
                bail!("--tls-cert cannot be used with --advertise yet: the instances pass retries to each other over plain HTTP on the same listener; terminate TLS in front of each instance instead");
            }
            let files = front::tls::TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            };
            Some(Arc::new(front::tls::TlsFront::load(files)?))
        }
        (Some(_), Some(_)) => bail!("--tls-cert and --tls-key are for the HTTP front, not --stdio"),
        (Some(_), None) | (None, Some(_)) => {
            bail!("--tls-cert and --tls-key go together: give both PEM files, or neither")
        }
        (None, None) => None,
    })
}

/// What SIGHUP re-reads.
struct Reloadable {
    /// `--state-key-file` and the sealer whose keys it holds.
    keyring: Option<(std::path::PathBuf, state::Sealer)>,
    /// `--tls-cert` and `--tls-key`.
    tls: Option<Arc<front::tls::TlsFront>>,
}

/// On SIGHUP, re-reads `--state-key-file` (the sealer's keys are swapped) and the TLS
/// certificate and key (new connections get them; connections in flight keep theirs). A file
/// that cannot be read or parsed keeps what is in use, with an error in the log.
fn spawn_reloader(reloadable: Reloadable, shutdown: tokio_util::sync::CancellationToken) {
    if reloadable.keyring.is_none() && reloadable.tls.is_none() {
        return;
    }
    #[cfg(unix)]
    tokio::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut hangup) = signal(SignalKind::hangup()) else {
            return;
        };
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                received = hangup.recv() => if received.is_none() { return },
            }
            if let Some((path, sealer)) = &reloadable.keyring {
                reload_keyring(path, sealer);
            }
            if let Some(tls) = &reloadable.tls {
                match tls.reload() {
                    Ok(()) => tracing::info!(
                        cert = %tls.files().cert.display(),
                        "SIGHUP: TLS certificate reloaded (new connections use it)"
                    ),
                    Err(error) => tracing::error!(
                        %error,
                        "SIGHUP: the TLS certificate was not reloaded; the one in use stays"
                    ),
                }
            }
        }
    });
    #[cfg(not(unix))]
    let _ = (reloadable, shutdown);
}

/// Re-reads `--state-key-file` and swaps the sealer's keys, or keeps them (logged).
#[cfg(unix)]
fn reload_keyring(path: &std::path::Path, sealer: &state::Sealer) {
    match read_keyring(path) {
        Ok(keys) => {
            sealer.replace(&keys);
            tracing::info!(keys = ?keys.ids(), "SIGHUP: requestState keys reloaded (the last seals)");
        }
        Err(error) => {
            tracing::error!(
                error = format!("{error:#}"),
                "SIGHUP: the requestState keys were not reloaded; the keys in use stay"
            );
        }
    }
}

/// Runs `tick` every `period` (the first at once) until `shutdown`.
fn spawn_every<F, Fut>(period: Duration, shutdown: tokio_util::sync::CancellationToken, tick: F)
where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(period);
        loop {
            tokio::select! {
                _ = interval.tick() => tick().await,
                () = shutdown.cancelled() => return,
            }
        }
    });
}

/// Probes the pause store every second ([`store::PauseStore::health`]).
fn spawn_store_probe(engine: Arc<engine::Engine>, shutdown: tokio_util::sync::CancellationToken) {
    spawn_every(limits::STORE_PROBE_PERIOD, shutdown, move || {
        let engine = engine.clone();
        async move { engine.probe_store().await }
    });
}

/// Ends idle legacy sessions and forgets ended ones.
fn spawn_legacy_sweeper(
    legacy: Arc<legacy_session::LegacySessions>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    spawn_every(legacy.sweep_period(), shutdown, move || {
        let legacy = legacy.clone();
        async move { legacy.sweep().await }
    });
}

/// Closes lanes idle for `--lane-idle-timeout`, checking four times per timeout (at most every
/// 30 s, at least every 100 ms).
fn spawn_idle_lane_closer(
    pools: Arc<backend::PrincipalPools>,
    idle_timeout: Duration,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let period = (idle_timeout / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
    spawn_every(period, shutdown, move || {
        pools.close_idle();
        std::future::ready(())
    });
}

/// Expires paused calls past their deadline, checking four times per `--pause-ttl` (at most
/// every 5 s, at least every 100 ms).
fn spawn_sweeper(
    engine: Arc<engine::Engine>,
    pause_ttl: Duration,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let period = (pause_ttl / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    spawn_every(period, shutdown, move || {
        let engine = engine.clone();
        async move { engine.sweep().await }
    });
}
