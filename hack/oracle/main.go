// Command oracle answers questions about Go's reference behaviour so that
// kumaco's Python re-implementations can be tested differentially.
//
// It reads one JSON request per line on stdin and writes one JSON response
// per line on stdout:
//
//	{"op":"cron","spec":"...","after":[unix seconds, ...]}
//	    -> {"next":[unix seconds or null, ...]} or {"error":"..."}
//	    cron.ParseStandard with time.Local forced to UTC, so a spec without
//	    a CRON_TZ=/TZ= prefix is evaluated in UTC; a panic inside the parser
//	    is reported as {"error":"panic: ..."}.
//	{"op":"duration","text":"..."}
//	    -> {"ns": nanoseconds} or {"error":"..."} from time.ParseDuration.
//	{"op":"proxy","env":{"HTTPS_PROXY":"...","NO_PROXY":"..."},"url":"https://..."}
//	    -> {"proxy":"http://..."} or {"proxy":null} (direct) or {"error":"..."}:
//	    golang.org/x/net/http/httpproxy (what net/http.ProxyFromEnvironment and
//	    so client-go use) with that environment instead of the process's.
//
// Zones are resolved by time.LoadLocation; set ZONEINFO to make it read the
// same tz database as the code under test (time/tzdata is the fallback).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
	_ "time/tzdata"

	"net/url"

	"github.com/robfig/cron/v3"
	"golang.org/x/net/http/httpproxy"
)

type request struct {
	Op    string            `json:"op"`
	Spec  string            `json:"spec"`
	After []int64           `json:"after"`
	Text  string            `json:"text"`
	Env   map[string]string `json:"env"`
	URL   string            `json:"url"`
}

// proxyFor is httpproxy.FromEnvironment with the environment given, not the process's.
func proxyFor(env map[string]string, raw string) map[string]any {
	get := func(names ...string) string {
		for _, n := range names {
			if v := env[n]; v != "" {
				return v
			}
		}
		return ""
	}
	cfg := &httpproxy.Config{
		HTTPProxy:  get("HTTP_PROXY", "http_proxy"),
		HTTPSProxy: get("HTTPS_PROXY", "https_proxy"),
		NoProxy:    get("NO_PROXY", "no_proxy"),
		CGI:        env["REQUEST_METHOD"] != "",
	}
	u, err := url.Parse(raw)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	p, err := cfg.ProxyFunc()(u)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	if p == nil {
		return map[string]any{"proxy": nil}
	}
	return map[string]any{"proxy": p.String()}
}

func cronNext(spec string, after []int64) (resp map[string]any) {
	defer func() {
		if r := recover(); r != nil {
			resp = map[string]any{"error": fmt.Sprintf("panic: %v", r)}
		}
	}()
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	next := make([]any, 0, len(after))
	for _, a := range after {
		t := sched.Next(time.Unix(a, 0).UTC())
		if t.IsZero() {
			next = append(next, nil)
		} else {
			next = append(next, t.Unix())
		}
	}
	return map[string]any{"next": next}
}

func parseDuration(text string) map[string]any {
	d, err := time.ParseDuration(text)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	return map[string]any{"ns": int64(d)}
}

func main() {
	// A schedule without a zone prefix uses time.Local; pin it to UTC so the
	// answers do not depend on the machine running the oracle.
	time.Local = time.UTC

	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if err == io.EOF {
				return
			}
			fmt.Fprintf(os.Stderr, "oracle: bad request: %v\n", err)
			os.Exit(2)
		}
		var resp map[string]any
		switch req.Op {
		case "cron":
			resp = cronNext(req.Spec, req.After)
		case "duration":
			resp = parseDuration(req.Text)
		case "proxy":
			resp = proxyFor(req.Env, req.URL)
		default:
			resp = map[string]any{"error": fmt.Sprintf("unknown op %q", req.Op)}
		}
		if err := enc.Encode(resp); err != nil {
			fmt.Fprintf(os.Stderr, "oracle: %v\n", err)
			os.Exit(2)
		}
		if err := out.Flush(); err != nil {
			fmt.Fprintf(os.Stderr, "oracle: %v\n", err)
			os.Exit(2)
		}
	}
}
