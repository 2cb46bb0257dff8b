// edgebench-httpduet: the HTTP workload's runs of several testbed members measured in one time window.
//
// A duet round of the namespace testbed stands the host baseline and the CNI modes side by side (each on its own
// network namespaces). Run one after another, an HTTP run and its host run are seconds apart, and an HTTP p50 moves
// with the machine at the scale of tens of milliseconds (docs/verdicts.md), so that drift does not cancel in the
// pair. This client holds one kept-alive connection per member, each opened inside that member's client network
// namespace, and sends the members' requests interleaved: cycle c sends request c to every member once, in an order
// drawn at random per cycle (randomized interleaved trials, Abedi and Brecht, ICPE 2017). One request is in flight
// at a time, so the members never share the CPU at the same moment; each member's p50 then covers the same window.
//
// Input: a JSON config on stdin:
//
//	{"requests": 1000, "timeout_s": 30, "seed": 1,
//	 "targets": [{"name": "host", "netns": "/run/netns/eb-d0-n1-p1", "url": "http://10.77.0.12:8080/echo",
//	              "method": "POST", "body_file": "/tmp/body", "access_log": "/tmp/host.log"}, ...]}
//
// Output: per target, its access log in fortio's JSON access-log format (one object per request: latency in
// seconds, timestamp = start in Unix ns, thread 0, iter, ok, details = the status code or "-1"), so the HTTP
// driver's parser reads it as it reads fortio's. Exit 0 when every target answered at least one request, 1 with
// one line per target that did not, 2 on bad input.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

type target struct {
	Name      string `json:"name"`
	Netns     string `json:"netns"` // a network namespace file (/run/netns/NAME); "" = this process's
	URL       string `json:"url"`
	Method    string `json:"method"`
	BodyFile  string `json:"body_file"`
	AccessLog string `json:"access_log"`
}

type config struct {
	Requests int      `json:"requests"`
	TimeoutS float64  `json:"timeout_s"`
	Seed     int64    `json:"seed"`
	Burst    int      `json:"burst"` // consecutive requests to one member before the next (default 1)
	Targets  []target `json:"targets"`
}

type logLine struct {
	Latency   float64 `json:"latency"`
	Timestamp int64   `json:"timestamp"`
	Thread    int     `json:"thread"`
	Iter      int     `json:"iter"`
	OK        bool    `json:"ok"`
	Details   string  `json:"details"`
}

const sysSetns = 308 // setns(2) on amd64
const cloneNewnet = 0x40000000

func setnsNR() uintptr {
	if runtime.GOARCH == "arm64" {
		return 268
	}
	return sysSetns
}

// dialIn opens a TCP connection from inside the network namespace in file `netns`: the dialing goroutine's OS thread
// enters it, dials and comes back; a socket stays in the namespace it was created in.
func dialIn(netns string, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if netns == "" {
		return d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		runtime.LockOSThread()
		home, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", syscall.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			return nil, err
		}
		defer home.Close()
		there, err := os.Open(netns)
		if err != nil {
			runtime.UnlockOSThread()
			return nil, err
		}
		defer there.Close()
		if _, _, e := syscall.RawSyscall(setnsNR(), there.Fd(), cloneNewnet, 0); e != 0 {
			runtime.UnlockOSThread()
			return nil, fmt.Errorf("setns %s: %w", netns, e)
		}
		conn, derr := d.DialContext(ctx, network, addr)
		if _, _, e := syscall.RawSyscall(setnsNR(), home.Fd(), cloneNewnet, 0); e != 0 {
			// this thread stays in the other namespace: leave it locked, so it ends with the goroutine
			return nil, errors.Join(derr, fmt.Errorf("setns back: %w", e))
		}
		runtime.UnlockOSThread()
		return conn, derr
	}
}

type member struct {
	t      target
	client *http.Client
	body   []byte
	out    *os.File
	enc    *json.Encoder
	ok     int
	last   string
}

func fail(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, "edgebench-httpduet: error: "+format+"\n", a...)
	os.Exit(code)
}

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: edgebench-httpduet < config.json (see the comment at the top of main.go)")
		os.Exit(2)
	}
	var cfg config
	dec := json.NewDecoder(os.Stdin)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		fail(2, "the config on stdin: %v", err)
	}
	if cfg.Requests < 1 || len(cfg.Targets) < 1 {
		fail(2, "the config needs requests >= 1 and at least one target (got %d, %d)", cfg.Requests, len(cfg.Targets))
	}
	if cfg.TimeoutS <= 0 {
		cfg.TimeoutS = 30
	}
	timeout := time.Duration(cfg.TimeoutS * float64(time.Second))
	members := make([]*member, len(cfg.Targets))
	for i, t := range cfg.Targets {
		if t.URL == "" || t.AccessLog == "" {
			fail(2, "target %d (%q) needs url and access_log", i, t.Name)
		}
		if t.Method == "" {
			t.Method = http.MethodGet
		}
		m := &member{t: t}
		if t.BodyFile != "" {
			b, err := os.ReadFile(t.BodyFile)
			if err != nil {
				fail(2, "target %q: %v", t.Name, err)
			}
			m.body = b
		}
		tr := &http.Transport{DialContext: dialIn(t.Netns, timeout), MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1,
			DisableCompression: true, ResponseHeaderTimeout: timeout}
		m.client = &http.Client{Transport: tr, Timeout: timeout}
		f, err := os.Create(t.AccessLog)
		if err != nil {
			fail(2, "target %q: %v", t.Name, err)
		}
		m.out, m.enc = f, json.NewEncoder(f)
		members[i] = m
	}
	rng := rand.New(rand.NewSource(cfg.Seed))
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	if cfg.Burst < 1 {
		cfg.Burst = 1
	}
	for c := 0; c < cfg.Requests; c += cfg.Burst {
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, k := range order {
			for i := c; i < c+cfg.Burst && i < cfg.Requests; i++ {
				members[k].request(i)
			}
		}
	}
	bad := 0
	for _, m := range members {
		m.out.Close()
		if m.ok == 0 {
			bad++
			fmt.Fprintf(os.Stderr, "edgebench-httpduet: error: %s (%s): no request answered: %s\n", m.t.Name, m.t.URL, m.last)
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
}

func (m *member) request(iter int) {
	req, err := http.NewRequest(m.t.Method, m.t.URL, bytes.NewReader(m.body))
	if err != nil {
		fail(2, "target %q: %v", m.t.Name, err)
	}
	if m.body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	start := time.Now()
	resp, err := m.client.Do(req)
	status := "-1"
	ok := false
	if err == nil {
		_, cerr := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status = strconv.Itoa(resp.StatusCode)
		ok = cerr == nil && resp.StatusCode >= 200 && resp.StatusCode < 400
		if cerr != nil {
			m.last = cerr.Error()
		}
	} else {
		m.last = err.Error()
	}
	lat := time.Since(start)
	if ok {
		m.ok++
	}
	// latency to 1 us, as fortio prints it
	_ = m.enc.Encode(logLine{Latency: math.Round(lat.Seconds()*1e6) / 1e6, Timestamp: start.UnixNano(), Thread: 0,
		Iter: iter, OK: ok, Details: status})
}
