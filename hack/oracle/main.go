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
//	{"op":"chain","spec":"...","from":s,"until":u}
//	    -> {"fires":[unix seconds, ...]}: robfig's firings as a cron runner
//	    yields them, each Next taken from the previous firing, starting with
//	    Next(from), while <= until (at most 100000).
//	{"op":"duration","text":"..."}
//	    -> {"ns": nanoseconds} or {"error":"..."} from time.ParseDuration.
//	{"op":"proxy","env":{"HTTPS_PROXY":"...","NO_PROXY":"..."},"url":"https://..."}
//	    -> {"proxy":"http://..."} or {"proxy":null} (direct) or {"error":"..."}:
//	    golang.org/x/net/http/httpproxy (what net/http.ProxyFromEnvironment and
//	    so client-go use) with that environment instead of the process's.
//
// Go's time package, for kumaco's reimplementation of it (kumaco/core/golang/gotime.py):
//
//	{"op":"date","zone":"...","wall":[y,mo,d,h,mi,s]}
//	    -> {"unix": s}: time.Date(y, mo, d, h, mi, s, 0, zone), any values (normalised as Go does)
//	{"op":"adddate","zone":"...","t":s,"ymd":[y,m,d]}
//	    -> {"unix": s}: time.Unix(t, 0).In(zone).AddDate(y, m, d)
//	{"op":"wall","zone":"...","instants":[s, ...]}
//	    -> {"walls":[[y,mo,d,h,mi,s,weekday], ...]}: t.In(zone).Date(), Clock(), Weekday()
//	{"op":"offsets","zone":"...","instants":[s, ...]} or {"op":"offsets","tzif":"<base64>",...}
//	    -> {"offsets":[seconds east of UTC, ...]} from t.In(zone).Zone(), the zone
//	    loaded by name or from TZif bytes (time.LoadLocationFromTZData), or {"error":"..."}
//	{"op":"truncate","instants":[s, ...],"d":seconds}
//	    -> {"unix":[s, ...]}: time.Unix(t, 0).Truncate(d) (on absolute time, from year 1)
//
// metav1.LabelSelector, for kumaco's reading of a window's nodeSelector (kumaco/core/labels/node_selector.py):
//
//	{"op":"labelselector","text":"...","labels":[{...}, ...]}
//	    -> {"selector":"<Selector.String()>","empty":bool,"matches":[bool, ...]} or
//	    {"error":"...","stage":"decode"|"selector"}: the text decoded by
//	    sigs.k8s.io/yaml.UnmarshalStrict into a metav1.LabelSelector (stage
//	    "decode" when that fails), then metav1.LabelSelectorAsSelector (stage
//	    "selector" when that fails); "matches" is Selector.Matches of each label set.
//	{"op":"kuredselector","text":"..."}
//	    -> {"selector":"..."} or {"error":"..."}: what kured v2's maintenance-scheduler
//	    does with a nodeSelector (internal/maintenances/configmaps.go): "" selects
//	    everything, anything else is decoded by gopkg.in/yaml.v3 into a
//	    metav1.LabelSelector, then given to metav1.LabelSelectorAsSelector.
//
// Go's time.ParseInLocation, for kumaco's reading of kured v1's times (kumaco/migration/kuredv1.py):
//
//	{"op":"parseclock","layouts":["15:04", ...],"text":"..."}
//	    -> {"clock":[h,mi,s,ns],"layout":i} from the first layout that parses text (in UTC),
//	    or {"error":"..."} when none does.
//
// Go's regexp.Compile, as kured v1's --alert-filter-regexp takes its value:
//
//	{"op":"regexp","text":"..."} -> {"ok":true} or {"error":"..."}
//
// Zones are resolved by time.LoadLocation; set ZONEINFO to make it read the
// same tz database as the code under test (time/tzdata is the fallback).
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"
	_ "time/tzdata"

	"net/url"

	"github.com/robfig/cron/v3"
	"golang.org/x/net/http/httpproxy"
	yamlv3 "gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

type request struct {
	Op       string              `json:"op"`
	Spec     string              `json:"spec"`
	After    []int64             `json:"after"`
	From     int64               `json:"from"`
	Until    int64               `json:"until"`
	Text     string              `json:"text"`
	Env      map[string]string   `json:"env"`
	URL      string              `json:"url"`
	Zone     string              `json:"zone"`
	TZif     *string             `json:"tzif"`
	Wall     []int               `json:"wall"`
	T        int64               `json:"t"`
	YMD      []int               `json:"ymd"`
	Instants []int64             `json:"instants"`
	D        int64               `json:"d"`
	Labels   []map[string]string `json:"labels"`
	Layouts  []string            `json:"layouts"`
}

// parseClock tries each layout in order with time.ParseInLocation (UTC) and gives the
// wall clock of the first that parses, as kured v1 reads --start-time and --end-time.
func parseClock(layouts []string, text string) map[string]any {
	for i, layout := range layouts {
		t, err := time.ParseInLocation(layout, text, time.UTC)
		if err == nil {
			return map[string]any{"clock": []int{t.Hour(), t.Minute(), t.Second(), t.Nanosecond()}, "layout": i}
		}
	}
	return map[string]any{"error": "no layout parses it"}
}

func labelSelector(text string, sets []map[string]string) map[string]any {
	var ls metav1.LabelSelector
	if err := yaml.UnmarshalStrict([]byte(text), &ls); err != nil {
		return map[string]any{"error": err.Error(), "stage": "decode"}
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return map[string]any{"error": err.Error(), "stage": "selector"}
	}
	matches := make([]bool, 0, len(sets))
	for _, set := range sets {
		matches = append(matches, sel.Matches(labels.Set(set)))
	}
	return map[string]any{"selector": sel.String(), "empty": sel.Empty(), "matches": matches}
}

// kuredSelector is kured v2's NewWindowFromConfigMap, nodeSelector part, as written there.
func kuredSelector(text string) map[string]any {
	if text == "" {
		return map[string]any{"selector": labels.Everything().String()}
	}
	var ls metav1.LabelSelector
	if err := yamlv3.Unmarshal([]byte(text), &ls); err != nil {
		return map[string]any{"error": err.Error()}
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	return map[string]any{"selector": sel.String()}
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

func chain(spec string, from, until int64) map[string]any {
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	fires := []int64{}
	t := time.Unix(from, 0).UTC()
	for len(fires) < 100000 {
		t = sched.Next(t)
		if t.IsZero() || t.Unix() > until {
			break
		}
		fires = append(fires, t.Unix())
	}
	return map[string]any{"fires": fires}
}

func location(req request) (*time.Location, error) {
	if req.TZif != nil {
		data, err := base64.StdEncoding.DecodeString(*req.TZif)
		if err != nil {
			return nil, err
		}
		return time.LoadLocationFromTZData("tzif", data)
	}
	return time.LoadLocation(req.Zone)
}

func timeOp(req request) map[string]any {
	loc, err := location(req)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	switch req.Op {
	case "date":
		if len(req.Wall) != 6 {
			return map[string]any{"error": "wall needs 6 fields"}
		}
		w := req.Wall
		t := time.Date(w[0], time.Month(w[1]), w[2], w[3], w[4], w[5], 0, loc)
		return map[string]any{"unix": t.Unix()}
	case "adddate":
		if len(req.YMD) != 3 {
			return map[string]any{"error": "ymd needs 3 fields"}
		}
		t := time.Unix(req.T, 0).In(loc).AddDate(req.YMD[0], req.YMD[1], req.YMD[2])
		return map[string]any{"unix": t.Unix()}
	case "wall":
		walls := make([][]int, 0, len(req.Instants))
		for _, s := range req.Instants {
			t := time.Unix(s, 0).In(loc)
			y, mo, d := t.Date()
			h, mi, sec := t.Clock()
			walls = append(walls, []int{y, int(mo), d, h, mi, sec, int(t.Weekday())})
		}
		return map[string]any{"walls": walls}
	case "offsets":
		offsets := make([]int, 0, len(req.Instants))
		for _, s := range req.Instants {
			_, off := time.Unix(s, 0).In(loc).Zone()
			offsets = append(offsets, off)
		}
		return map[string]any{"offsets": offsets}
	}
	return map[string]any{"error": fmt.Sprintf("unknown op %q", req.Op)}
}

func truncate(instants []int64, d int64) map[string]any {
	out := make([]int64, 0, len(instants))
	for _, s := range instants {
		out = append(out, time.Unix(s, 0).Truncate(time.Duration(d)*time.Second).Unix())
	}
	return map[string]any{"unix": out}
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
		case "chain":
			resp = chain(req.Spec, req.From, req.Until)
		case "duration":
			resp = parseDuration(req.Text)
		case "proxy":
			resp = proxyFor(req.Env, req.URL)
		case "date", "adddate", "wall", "offsets":
			resp = timeOp(req)
		case "truncate":
			resp = truncate(req.Instants, req.D)
		case "labelselector":
			resp = labelSelector(req.Text, req.Labels)
		case "kuredselector":
			resp = kuredSelector(req.Text)
		case "parseclock":
			resp = parseClock(req.Layouts, req.Text)
		case "regexp":
			if _, err := regexp.Compile(req.Text); err != nil {
				resp = map[string]any{"error": err.Error()}
			} else {
				resp = map[string]any{"ok": true}
			}
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
