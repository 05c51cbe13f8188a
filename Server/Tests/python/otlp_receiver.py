"""An OpenTelemetry collector's OTLP/HTTP trace endpoint, for the tracing
tests (docs/TRACING.md): it decodes what `canopy serve` exports with the
protocol's own message types (the `opentelemetry-proto` package) and prints
each span as a JSON line, so a test can check the tree.

    python3 otlp_receiver.py [--host 127.0.0.1] [--discard]

It listens on a free loopback port and prints
`{"type": "listening", "port": N}`; then, for every span received,
`{"type": "span", "trace_id": hex, "span_id": hex, "parent_span_id": hex
or "", "name": ..., "kind": "SERVER"|..., "attributes": {...}, "status":
"OK"|"ERROR"|"UNSET", "service": service.name, "start_ns": n, "end_ns": n}`;
and for a request it could not decode, `{"type": "bad_request", "reason":
...}` (answered 400). It answers POST /v1/traces only.

With `--discard` (`make bench`'s tracing section) it answers 200 to every
export without decoding or printing it: a collector that costs the
machine as little as one can.
"""

import argparse
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

KINDS = {
    trace_pb2.Span.SPAN_KIND_UNSPECIFIED: "UNSPECIFIED",
    trace_pb2.Span.SPAN_KIND_INTERNAL: "INTERNAL",
    trace_pb2.Span.SPAN_KIND_SERVER: "SERVER",
    trace_pb2.Span.SPAN_KIND_CLIENT: "CLIENT",
    trace_pb2.Span.SPAN_KIND_PRODUCER: "PRODUCER",
    trace_pb2.Span.SPAN_KIND_CONSUMER: "CONSUMER",
}
STATUSES = {0: "UNSET", 1: "OK", 2: "ERROR"}
print_lock = threading.Lock()
EMPTY_RESPONSE = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()


def emit(obj):
    with print_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", content_type="application/x-protobuf"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.server.discard:
            return self.answer(200, EMPTY_RESPONSE)
        if self.path != "/v1/traces":
            emit({"type": "bad_request", "reason": "path " + self.path})
            return self.answer(404)
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        content_type = self.headers.get("Content-Type", "")
        request = trace_service_pb2.ExportTraceServiceRequest()
        try:
            if content_type.startswith("application/x-protobuf"):
                request.ParseFromString(body)
            else:
                raise ValueError("content type " + content_type)
        except Exception as error:  # noqa: BLE001 - reported to the test
            emit({"type": "bad_request", "reason": str(error)})
            return self.answer(400)
        for resource_spans in request.resource_spans:
            resource = {kv.key: value_of(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    emit({
                        "type": "span",
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": KINDS.get(span.kind, str(span.kind)),
                        "attributes": {kv.key: value_of(kv.value) for kv in span.attributes},
                        "status": STATUSES.get(span.status.code, str(span.status.code)),
                        "status_message": span.status.message,
                        # Events too: recordError writes exception.message into one.
                        "events": [{"name": event.name, "attributes": {kv.key: value_of(kv.value) for kv in event.attributes}}
                                   for event in span.events],
                        "service": resource.get("service.name"),
                        "start_ns": span.start_time_unix_nano,
                        "end_ns": span.end_time_unix_nano,
                    })
        self.answer(200, EMPTY_RESPONSE)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to listen on")
    parser.add_argument("--discard", action="store_true", help="answer every export without decoding or printing it")
    arguments = parser.parse_args()
    if not (arguments.host.startswith("127.") or arguments.host == "::1"):
        parser.error("listens on loopback only")
    server = ThreadingHTTPServer((arguments.host, 0), Handler)
    server.discard = arguments.discard
    emit({"type": "listening", "port": server.server_address[1]})
    server.serve_forever()


if __name__ == "__main__":
    main()
