package main

// `testenv otlpsink`: an OTLP/HTTP trace receiver for the tests of the sidecar's export. It
// decodes each `POST /v1/traces` with the OpenTelemetry project's own generated protobuf types
// (go.opentelemetry.io/proto/otlp, the messages every OTLP collector decodes) and prints each
// span received as one JSON line on stdout:
//
//	{"traceId": "<hex>", "spanId": "<hex>", "parentSpanId": "<hex or empty>", "name": "...",
//	 "kind": "SPAN_KIND_INTERNAL", "startUnixNano": 1, "endUnixNano": 2,
//	 "attributes": {"k": value}, "resource": {"service.name": "..."}, "scope": "...",
//	 "events": [{"name": "...", "timeUnixNano": 1, "attributes": {...}}],
//	 "status": {"code": "STATUS_CODE_ERROR", "message": "..."},
//	 "authorization": "<the request's Authorization header>"}
//
// Its first stdout line is `listening http://<address>`. With --fail N the first N requests
// are answered 503 (a collector that is down for a while). With --quiet the spans are decoded
// and counted but not printed (a benchmark's collector); `GET /count` answers how many spans
// it took. A body that is not an OTLP trace request is answered 400 and said on stderr; a
// content type other than application/x-protobuf is answered 415.

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

type sinkEvent struct {
	Name       string         `json:"name"`
	Time       uint64         `json:"timeUnixNano"`
	Attributes map[string]any `json:"attributes"`
}

type sinkStatus struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type sinkSpan struct {
	TraceID       string         `json:"traceId"`
	SpanID        string         `json:"spanId"`
	ParentSpanID  string         `json:"parentSpanId"`
	Name          string         `json:"name"`
	Kind          string         `json:"kind"`
	Start         uint64         `json:"startUnixNano"`
	End           uint64         `json:"endUnixNano"`
	Attributes    map[string]any `json:"attributes"`
	Resource      map[string]any `json:"resource"`
	Scope         string         `json:"scope"`
	Events        []sinkEvent    `json:"events"`
	Status        sinkStatus     `json:"status"`
	Authorization string         `json:"authorization"`
}

func anyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		out := []any{}
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyValue(e))
		}
		return out
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	default:
		return nil
	}
}

func attributes(kvs []*commonpb.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		out[kv.GetKey()] = anyValue(kv.GetValue())
	}
	return out
}

func otlpsink(args []string) int {
	fs := flag.NewFlagSet("otlpsink", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	fail := fs.Int("fail", 0, "answer the first N requests 503")
	quiet := fs.Bool("quiet", false, "count the spans, print none")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "otlpsink: %v\n", err)
		return 1
	}
	var mu sync.Mutex
	failures := *fail
	taken := 0
	out := json.NewEncoder(os.Stdout)
	fmt.Printf("listening http://%s\n", ln.Addr())
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/count" {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(w, "%d\n", taken)
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.Error(w, "only POST /v1/traces", http.StatusNotFound)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			failures--
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = gz
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			fmt.Fprintf(os.Stderr, "otlpsink: not an OTLP trace request: %v\n", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.GetResourceSpans() {
			resource := attributes(rs.GetResource().GetAttributes())
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					taken++
					if *quiet {
						continue
					}
					span := sinkSpan{
						TraceID:       hex.EncodeToString(s.GetTraceId()),
						SpanID:        hex.EncodeToString(s.GetSpanId()),
						ParentSpanID:  hex.EncodeToString(s.GetParentSpanId()),
						Name:          s.GetName(),
						Kind:          s.GetKind().String(),
						Start:         s.GetStartTimeUnixNano(),
						End:           s.GetEndTimeUnixNano(),
						Attributes:    attributes(s.GetAttributes()),
						Resource:      resource,
						Scope:         ss.GetScope().GetName(),
						Events:        []sinkEvent{},
						Status:        sinkStatus{Code: s.GetStatus().GetCode().String(), Message: s.GetStatus().GetMessage()},
						Authorization: r.Header.Get("Authorization"),
					}
					for _, e := range s.GetEvents() {
						span.Events = append(span.Events, sinkEvent{Name: e.GetName(), Time: e.GetTimeUnixNano(), Attributes: attributes(e.GetAttributes())})
					}
					if err := out.Encode(span); err != nil {
						fmt.Fprintf(os.Stderr, "otlpsink: %v\n", err)
					}
				}
			}
		}
		reply, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = io.Copy(w, bytes.NewReader(reply))
	})
	if err := http.Serve(ln, handler); err != nil {
		fmt.Fprintf(os.Stderr, "otlpsink: %v\n", err)
		return 1
	}
	return 0
}
