// edgebench-netem-emu: a userspace stand-in for `tc netem` (delay, jitter, loss) for kernels without sch_netem.
//
// It binds an NFQUEUE queue in the network namespace it runs in (run it with `ip netns exec <ns>`); a netfilter
// rule in that namespace queues the uplink's egress packets to it (edgebench's netem.py installs and removes the
// rule). For every packet it decides:
//
//   - loss: drop with probability loss-pct/100 (independent, like netem's `loss random P`);
//   - delay: hold it for delay + jitter*N(0,1) ms, clipped at 0 (netem's `distribution normal`), then accept.
//
// Packet order is kept: a packet is never released before the one queued ahead of it (release time =
// max(arrival + sampled delay, previous release time)). Real netem reorders packets when jitter is larger than
// the inter-packet gap (unless a rate or a child qdisc is set); we do not, because reordering would distort TCP
// results in a way the papers' scenarios do not intend. The cost: under back-to-back traffic the delay
// distribution is skewed upwards (a packet may wait for its predecessor); at the papers' jitter values (<= 2 ms)
// and ping-like traffic this is negligible. The report says so (`keeps_order`).
//
// The queue holds at most -limit packets (netem's `limit`); packets beyond that are dropped and counted.
// A JSON report (config and counters) is written to -report once bound ("ready": true), every second, and on
// SIGTERM/SIGINT, when every held packet is released at once before exiting.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	nfqueue "github.com/florianl/go-nfqueue/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

type held struct {
	id      uint32
	arrival time.Time
	release time.Time
}

type report struct {
	Tool            string  `json:"tool"`
	Pid             int     `json:"pid"`
	Ready           bool    `json:"ready"`
	Stopped         bool    `json:"stopped"`
	Queue           uint    `json:"queue"`
	DelayMs         float64 `json:"delay_ms"`
	JitterMs        float64 `json:"jitter_ms"`
	LossPct         float64 `json:"loss_pct"`
	Distribution    string  `json:"distribution"`
	Limit           int     `json:"limit"`
	KeepsOrder      bool    `json:"keeps_order"`
	Seed            int64   `json:"seed"`
	StartedAt       string  `json:"started_at"`
	Packets         uint64  `json:"packets"`
	Accepted        uint64  `json:"accepted"`
	DroppedLoss     uint64  `json:"dropped_loss"`
	DroppedOverflow uint64  `json:"dropped_overflow"`
	MeanHeldMs      float64 `json:"mean_held_ms"`
	MeasuredLossPct float64 `json:"measured_loss_pct"`
}

func main() {
	queue := flag.Uint("queue", 7, "NFQUEUE number to bind (per network namespace)")
	delayMs := flag.Float64("delay-ms", 0, "mean added delay in ms")
	jitterMs := flag.Float64("jitter-ms", 0, "standard deviation of the added delay in ms (normal distribution)")
	lossPct := flag.Float64("loss-pct", 0, "packet loss probability in percent")
	limit := flag.Int("limit", 10000, "maximum number of packets held at once (netem's limit)")
	seed := flag.Int64("seed", 0, "random seed (0 = from the clock)")
	reportPath := flag.String("report", "", "write a JSON report here (ready, every second, at exit)")
	flag.Parse()

	if *delayMs < 0 || *jitterMs < 0 || *lossPct < 0 || *lossPct > 100 || *limit < 1 || *queue > 65535 {
		fmt.Fprintln(os.Stderr, "edgebench-netem-emu: delay/jitter must be >= 0, loss in [0,100], limit >= 1")
		os.Exit(2)
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano()
	}
	rng := rand.New(rand.NewSource(*seed))

	rep := report{Tool: "edgebench-netem-emu", Pid: os.Getpid(), Queue: *queue, DelayMs: *delayMs,
		JitterMs: *jitterMs, LossPct: *lossPct, Distribution: "normal", Limit: *limit, KeepsOrder: true,
		Seed: *seed, StartedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	var packets, accepted, droppedLoss, droppedOverflow atomic.Uint64
	var heldNs atomic.Int64
	var repMu sync.Mutex
	writeReport := func(ready, stopped bool) {
		if *reportPath == "" {
			return
		}
		repMu.Lock()
		defer repMu.Unlock()
		rep.Ready, rep.Stopped = ready, stopped
		rep.Packets, rep.Accepted = packets.Load(), accepted.Load()
		rep.DroppedLoss, rep.DroppedOverflow = droppedLoss.Load(), droppedOverflow.Load()
		if rep.Accepted > 0 {
			rep.MeanHeldMs = float64(heldNs.Load()) / float64(rep.Accepted) / 1e6
		}
		if rep.Packets > 0 {
			rep.MeasuredLossPct = 100 * float64(rep.DroppedLoss) / float64(rep.Packets)
		}
		data, _ := json.MarshalIndent(rep, "", "  ")
		tmp := *reportPath + ".tmp"
		if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err == nil {
			_ = os.Rename(tmp, *reportPath)
		}
	}

	nf, err := nfqueue.Open(&nfqueue.Config{
		NfQueue:      uint16(*queue),
		MaxQueueLen:  uint32(*limit),
		MaxPacketLen: 0,
		Copymode:     nfqueue.NfQnlCopyMeta,  // verdicts only: no payload copied to userspace
		Flags:        nfqueue.NfQaCfgFlagGSO, // take GSO packets whole instead of having the kernel segment them
		WriteTimeout: 50 * time.Millisecond,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "edgebench-netem-emu: could not open nfqueue:", err)
		os.Exit(1)
	}
	defer nf.Close()
	if err := nf.SetOption(netlink.NoENOBUFS, true); err != nil {
		fmt.Fprintln(os.Stderr, "edgebench-netem-emu: NoENOBUFS:", err)
	}

	pending := make(chan held, *limit)
	var mu sync.Mutex // guards rng and lastRelease (the callback runs in one goroutine, but be safe)
	var lastRelease time.Time
	delay := time.Duration(*delayMs * float64(time.Millisecond))
	jitter := *jitterMs * float64(time.Millisecond)
	loss := *lossPct / 100

	hook := func(a nfqueue.Attribute) int {
		if a.PacketID == nil {
			return 0
		}
		id := *a.PacketID
		packets.Add(1)
		now := time.Now()
		mu.Lock()
		if loss > 0 && rng.Float64() < loss {
			mu.Unlock()
			droppedLoss.Add(1)
			_ = nf.SetVerdict(id, nfqueue.NfDrop)
			return 0
		}
		d := delay
		if jitter > 0 {
			d = time.Duration(math.Max(0, float64(delay)+jitter*rng.NormFloat64()))
		}
		release := now.Add(d)
		if release.Before(lastRelease) {
			release = lastRelease // keep order
		}
		mu.Unlock()
		select {
		case pending <- held{id: id, arrival: now, release: release}:
			mu.Lock()
			lastRelease = release
			mu.Unlock()
		default:
			droppedOverflow.Add(1)
			_ = nf.SetVerdict(id, nfqueue.NfDrop)
		}
		return 0
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errfn := func(e error) int {
		var opErr *netlink.OpError
		if errors.As(e, &opErr) && (opErr.Timeout() || opErr.Temporary()) {
			return 0
		}
		if errors.Is(e, syscall.ENOBUFS) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "edgebench-netem-emu: receive error:", e)
		return 0
	}
	if err := nf.RegisterWithErrorFunc(ctx, hook, errfn); err != nil {
		fmt.Fprintln(os.Stderr, "edgebench-netem-emu: could not bind queue:", err)
		os.Exit(1)
	}

	// releaser: release times are non-decreasing, so a FIFO is enough. It sleeps with clock_nanosleep (an
	// hrtimer, ~50 us slack) rather than a Go timer: the Go runtime's timers wake through epoll with a
	// millisecond timeout and oversleep by ~0.5 ms on average, which would bias the added delay.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var lead time.Duration
		runtime.LockOSThread()
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0) // 1 us timer slack for this (locked) thread
		for {
			var p held
			select {
			case p = <-pending:
			case <-stop:
				return
			}
			slept := false
			for {
				// wake `lead` early: the EWMA of how late the verdicts went out (wake-up + syscall latency)
				wait := time.Until(p.release) - lead
				if wait <= 0 {
					break
				}
				slept = true
				ts := unix.NsecToTimespec(int64(wait))
				if err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, nil); err != nil && err != unix.EINTR {
					time.Sleep(wait)
				}
			}
			_ = nf.SetVerdict(p.id, nfqueue.NfAccept)
			now := time.Now()
			heldNs.Add(int64(now.Sub(p.arrival)))
			accepted.Add(1)
			if slept {
				// feedback: late = wake-up latency - lead; move lead towards the latency (clamped 0..1 ms)
				lead += now.Sub(p.release) / 8
				lead = min(max(lead, 0), time.Millisecond)
			}
		}
	}()

	writeReport(true, false)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case <-sigs:
			break loop
		case <-tick.C:
			writeReport(true, false)
		}
	}
	close(stop)
	<-done
	cancel()
	// release whatever is still held so that no packet is lost by stopping
	for {
		select {
		case p := <-pending:
			_ = nf.SetVerdict(p.id, nfqueue.NfAccept)
			accepted.Add(1)
			continue
		default:
		}
		break
	}
	writeReport(false, true)
}
