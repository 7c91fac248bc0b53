//! Where the binary's `tracing` output goes: the log on stderr, always, and
//! OTLP traces when the standard OpenTelemetry variables ask for them. The
//! library crates only emit spans; exporting them is this binary's choice.
//!
//! | variable | effect |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | export to this collector (off when neither is set) |
//! | `OTEL_TRACES_EXPORTER` | `otlp` exports (to `http://localhost:4318` unless an endpoint is set), `none` does not |
//! | `OTEL_SDK_DISABLED` | `true`: no export |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL`, `..._TRACES_PROTOCOL` | `http/protobuf`, the only one spoken here |
//! | `OTEL_EXPORTER_OTLP_HEADERS`, `..._TIMEOUT`, `..._COMPRESSION` | as the OTLP exporter specification says |
//! | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` | the resource (`service.name` is `hookbox` unless set) |
//! | `OTEL_BSP_*` | the batch processor's queue and delays |
//! | `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` | `true` or `SPAN_ONLY`: spans carry content (tool arguments and results, guards' reasons) |
//!
//! Only spans of hookbox's own crates are exported, never log events, so a
//! guest's log lines stay out of traces. Spans still queued are flushed when
//! [`Telemetry`] is dropped, on the way out of the process.

use std::time::Duration;

use anyhow::{Result, bail};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanProcessor};
use tracing::{Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// Span attributes that the conventions type as string arrays, recorded by
/// the libraries as JSON arrays (`tracing` has no array values).
const ARRAY_ATTRIBUTES: [&str; 1] = ["gen_ai.response.finish_reasons"];

/// How long the exit waits for the last spans to reach the collector.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// The process's log and trace export; flushes the export when dropped.
#[must_use = "dropping it flushes and ends the export"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Installs the log on stderr (`HOOKBOX_LOG`, else `RUST_LOG`, else
    /// `default_filter`) and, when `export` and the environment ask for it,
    /// OTLP export of spans. Leaves a subscriber the embedding program
    /// installed in place.
    ///
    /// # Errors
    /// An OpenTelemetry variable this binary cannot honour (a protocol other
    /// than http/protobuf, an exporter other than otlp), or an exporter that
    /// cannot be built.
    pub fn init(default_filter: &str, export: bool) -> Result<Telemetry> {
        let filter = tracing_subscriber::EnvFilter::try_from_env("HOOKBOX_LOG")
            .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
            .unwrap_or_else(|_| default_filter.into());
        let log = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(filter);
        let env = |name: &str| std::env::var(name).ok();
        let provider = if export && otlp_wanted(env)? {
            Some(otlp_provider(None)?)
        } else {
            None
        };
        hookbox::trace::set_capture_content(hookbox::trace::capture_setting(
            env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT").as_deref(),
        ));
        let traces = provider.as_ref().map(otel_layer);
        let _ = tracing_subscriber::registry()
            .with(log)
            .with(traces)
            .try_init();
        Ok(Telemetry { provider })
    }

    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown_with_timeout(FLUSH_TIMEOUT)
        {
            eprintln!("hookbox: the last spans may not have reached the OTLP collector: {e}");
        }
    }
}

/// Whether the environment asks for OTLP trace export.
///
/// # Errors
/// A value this binary cannot honour, named with what to set instead.
pub fn otlp_wanted(env: impl Fn(&str) -> Option<String>) -> Result<bool> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(false);
    }
    let wanted = match set("OTEL_TRACES_EXPORTER") {
        Some(exporters) => {
            let names: Vec<String> = exporters
                .split(',')
                .map(|n| n.trim().to_ascii_lowercase())
                .collect();
            if let Some(other) = names
                .iter()
                .find(|n| !matches!(n.as_str(), "otlp" | "none"))
            {
                bail!(
                    "OTEL_TRACES_EXPORTER={exporters}: hookbox exports traces over OTLP only, not `{other}`; set it to `otlp` or `none`"
                );
            }
            names.iter().any(|n| n == "otlp")
        }
        None => {
            set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
                || set("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
        }
    };
    if wanted
        && let Some((name, protocol)) = [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ]
        .into_iter()
        .find_map(|name| set(name).map(|v| (name, v)))
        && protocol.trim() != "http/protobuf"
    {
        bail!(
            "{name}={protocol}: hookbox exports OTLP over http/protobuf only (port 4318 on a collector); set it to `http/protobuf` or unset it"
        );
    }
    Ok(wanted)
}

/// A tracer provider exporting over OTLP/HTTP with protobuf, batched, to
/// `traces_url` (a collector's `/v1/traces`) or where the `OTEL_*` variables
/// say.
///
/// # Errors
/// The exporter cannot be built (a malformed endpoint or header).
pub fn otlp_provider(traces_url: Option<&str>) -> Result<SdkTracerProvider> {
    use opentelemetry_otlp::{Protocol, WithExportConfig};
    let env = |name: &str| std::env::var(name).ok();
    // An https collector speaks TLS through ring, as the model client does
    // (a no-op when it is installed already).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary);
    if let Some(url) = traces_url {
        exporter = exporter.with_endpoint(url);
    }
    let exporter = exporter
        .build()
        .map_err(|e| anyhow::anyhow!("building the OTLP exporter: {e}"))?;
    let named = env("OTEL_SERVICE_NAME").is_some_and(|v| !v.trim().is_empty())
        || env("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|v| v.contains("service.name="));
    let mut resource = Resource::builder()
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if !named {
        resource = resource.with_service_name("hookbox");
    }
    Ok(SdkTracerProvider::builder()
        .with_span_processor(Conventions(
            opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter).build(),
        ))
        .with_resource(resource.build())
        .build())
}

/// The layer that turns hookbox's spans into OpenTelemetry spans of
/// `provider`: spans only (no log events), from hookbox's crates, at info
/// level and the decisions' debug-level `hookbox::trace` spans.
pub fn otel_layer<S>(provider: &SdkTracerProvider) -> impl Layer<S> + use<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("hookbox"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
            meta.is_span()
                && meta.target().starts_with("hookbox")
                && (*meta.level() <= Level::INFO || meta.target() == "hookbox::trace")
        }))
}

/// Fixes up what `tracing` cannot say before `inner` exports a span:
/// attributes the conventions type as string arrays become arrays.
#[derive(Debug)]
pub struct Conventions<P>(pub P);

impl<P: SpanProcessor> SpanProcessor for Conventions<P> {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        self.0.on_start(span, cx);
    }

    fn on_end(&self, mut span: SpanData) {
        for attribute in &mut span.attributes {
            if ARRAY_ATTRIBUTES.contains(&attribute.key.as_str())
                && let Value::String(text) = &attribute.value
                && let Ok(items) = serde_json::from_str::<Vec<String>>(text.as_str())
            {
                attribute.value = Value::Array(Array::String(
                    items.into_iter().map(StringValue::from).collect(),
                ));
            }
        }
        self.0.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.0.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn export_is_off_unless_an_endpoint_or_the_exporter_asks() {
        assert!(!otlp_wanted(env(&[])).unwrap());
        assert!(!otlp_wanted(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])).unwrap());
        assert!(otlp_wanted(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")])).unwrap());
        assert!(otlp_wanted(env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c")])).unwrap());
        assert!(otlp_wanted(env(&[("OTEL_TRACES_EXPORTER", "otlp")])).unwrap());
        let off = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ];
        assert!(!otlp_wanted(env(&off)).unwrap());
        let disabled = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_SDK_DISABLED", "TRUE"),
        ];
        assert!(!otlp_wanted(env(&disabled)).unwrap());
    }

    #[test]
    fn a_protocol_or_exporter_it_cannot_speak_is_refused_with_what_to_set() {
        let grpc = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ];
        let error = otlp_wanted(env(&grpc)).unwrap_err().to_string();
        assert!(error.contains("http/protobuf"), "{error}");
        let zipkin = [("OTEL_TRACES_EXPORTER", "zipkin")];
        let error = otlp_wanted(env(&zipkin)).unwrap_err().to_string();
        assert!(error.contains("`otlp` or `none`"), "{error}");
        // Not exporting: a protocol nobody uses is no error.
        assert!(!otlp_wanted(env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")])).unwrap());
        let traces_wins = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
        ];
        assert!(otlp_wanted(env(&traces_wins)).unwrap());
    }
}
