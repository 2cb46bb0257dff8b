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
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
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

// member is one target's kept-alive connection and its prepared request. The client is as lean as fortio's fast
// client (raw HTTP/1.1 over one connection, the request bytes built once, the reply read by its Content-Length):
// Go's net/http client cost about 50 us more per request here, which a p50 of 130 us would carry on both sides of a
// comparison and so shrink every overhead against the host.
type member struct {
	t      target
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	addr   string
	req    []byte
	conn   net.Conn
	rd     *bufio.Reader
	out    *os.File
	enc    *json.Encoder
	ok     int
	last   string
	status string
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
		var body []byte
		if t.BodyFile != "" {
			b, err := os.ReadFile(t.BodyFile)
			if err != nil {
				fail(2, "target %q: %v", t.Name, err)
			}
			body = b
		}
		u, err := url.Parse(t.URL)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			fail(2, "target %q: url %q is not http://HOST:PORT/PATH", t.Name, t.URL)
		}
		m.addr = u.Host
		if u.Port() == "" {
			m.addr = net.JoinHostPort(u.Hostname(), "80")
		}
		m.dial = dialIn(t.Netns, timeout)
		head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: edgebench-httpduet\r\n", t.Method, u.RequestURI(), u.Host)
		if body != nil || t.Method == http.MethodPost {
			head += fmt.Sprintf("Content-Type: application/octet-stream\r\nContent-Length: %d\r\n", len(body))
		}
		m.req = append([]byte(head+"\r\n"), body...)
		f, err := os.Create(t.AccessLog)
		if err != nil {
			fail(2, "target %q: %v", t.Name, err)
		}
		m.out, m.enc = f, json.NewEncoder(f)
		members[i] = m
		defer m.close()
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
				members[k].request(i, timeout)
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

func (m *member) close() {
	if m.conn != nil {
		m.conn.Close()
		m.conn, m.rd = nil, nil
	}
}

// roundTrip sends the prepared request on the kept-alive connection (dialling it first if needed) and reads the
// whole reply; the status code, or an error (the connection is then closed, the next request dials again).
func (m *member) roundTrip(timeout time.Duration) (int, error) {
	if m.conn == nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		c, err := m.dial(ctx, "tcp", m.addr)
		cancel()
		if err != nil {
			return 0, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		m.conn, m.rd = c, bufio.NewReaderSize(c, 64<<10)
	}
	_ = m.conn.SetDeadline(time.Now().Add(timeout))
	if _, err := m.conn.Write(m.req); err != nil {
		return 0, err
	}
	line, err := m.rd.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(line))
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/1.") {
		return 0, fmt.Errorf("not an HTTP/1.x status line: %q", line)
	}
	code, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, fmt.Errorf("bad status code in %q", line)
	}
	length, closing := -1, false
	for {
		h, err := m.rd.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(h) <= 2 { // the blank line
			break
		}
		name, value, _ := strings.Cut(string(h), ":")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "content-length":
			if length, err = strconv.Atoi(strings.TrimSpace(value)); err != nil {
				return 0, fmt.Errorf("bad Content-Length %q", value)
			}
		case "transfer-encoding":
			return 0, fmt.Errorf("transfer-encoding %q: only replies with a Content-Length are read", strings.TrimSpace(value))
		case "connection":
			closing = strings.EqualFold(strings.TrimSpace(value), "close")
		}
	}
	if length < 0 {
		return 0, fmt.Errorf("reply without Content-Length")
	}
	if _, err := m.rd.Discard(length); err != nil {
		return 0, err
	}
	if closing {
		m.close()
	}
	return code, nil
}

func (m *member) request(iter int, timeout time.Duration) {
	start := time.Now()
	code, err := m.roundTrip(timeout)
	lat := time.Since(start)
	status, ok := "-1", false
	if err != nil {
		m.last = err.Error()
		m.close()
	} else {
		status, ok = strconv.Itoa(code), code >= 200 && code < 400
	}
	if ok {
		m.ok++
	}
	// latency to 1 us, as fortio prints it
	_ = m.enc.Encode(logLine{Latency: math.Round(lat.Seconds()*1e6) / 1e6, Timestamp: start.UnixNano(), Thread: 0,
		Iter: iter, OK: ok, Details: status})
}
