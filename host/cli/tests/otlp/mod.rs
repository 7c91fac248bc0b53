//! An OTLP/HTTP receiver for the CLI's tests: it decodes what arrives with
//! the official OTLP definitions (`opentelemetry-proto`, generated from the
//! opentelemetry-proto repository), as a collector would.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// An OTLP/HTTP receiver on a free port: every span of every export, with
/// the resource's `service.name`.
#[derive(Clone, Default)]
pub struct Receiver {
    spans: Arc<Mutex<Vec<(String, Span)>>>,
    problems: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    /// A receiver, and the endpoint to give the exporter.
    pub fn start() -> (Receiver, String) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let receiver = Receiver::default();
        let accepting = receiver.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let receiver = accepting.clone();
                std::thread::spawn(move || receiver.serve(stream));
            }
        });
        (receiver, endpoint)
    }

    /// Answers every request on one connection (keep-alive).
    fn serve(&self, stream: std::net::TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut stream = stream;
        loop {
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) if line == "\r\n" => break,
                    Ok(_) => head.push(line.trim_end().to_owned()),
                }
            }
            let header = |name: &str| {
                head.iter().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
                })
            };
            let length: usize = header("content-length").map_or(0, |v| v.parse().unwrap());
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            if !head[0].starts_with("POST /v1/traces ") {
                self.problem(format!("request to {}", head[0]));
            }
            if header("content-type").as_deref() != Some("application/x-protobuf") {
                self.problem(format!("content type {:?}", header("content-type")));
            }
            match ExportTraceServiceRequest::decode(&body[..]) {
                Ok(request) => self.take(request),
                Err(e) => self.problem(format!("undecodable export: {e}")),
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
            );
        }
    }

    fn take(&self, request: ExportTraceServiceRequest) {
        let mut spans = self.spans.lock().unwrap();
        for resource in request.resource_spans {
            let service = resource
                .resource
                .as_ref()
                .and_then(|r| attribute(&r.attributes, "service.name"))
                .unwrap_or_default();
            for scope in resource.scope_spans {
                spans.extend(scope.spans.into_iter().map(|s| (service.clone(), s)));
            }
        }
    }

    fn problem(&self, problem: String) {
        self.problems.lock().unwrap().push(problem);
    }

    /// Every span received so far (none of them from another service).
    pub fn spans(&self) -> Vec<Span> {
        assert_eq!(*self.problems.lock().unwrap(), Vec::<String>::new());
        let spans = self.spans.lock().unwrap();
        assert!(spans.iter().all(|(service, _)| service == "hookbox"));
        spans.iter().map(|(_, span)| span.clone()).collect()
    }
}

fn text(value: &AnyValue) -> String {
    match &value.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::ArrayValue(items)) => format!(
            "[{}]",
            items.values.iter().map(text).collect::<Vec<_>>().join(",")
        ),
        other => format!("{other:?}"),
    }
}

fn attribute(
    attributes: &[opentelemetry_proto::tonic::common::v1::KeyValue],
    key: &str,
) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .map(text)
}

/// A span's attributes, as text.
pub fn attributes(span: &Span) -> HashMap<String, String> {
    span.attributes
        .iter()
        .filter_map(|kv| Some((kv.key.clone(), text(kv.value.as_ref()?))))
        .collect()
}

/// The spans called `name`.
pub fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}
