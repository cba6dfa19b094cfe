// The webhook backend (--audit-webhook-config-file): events POSTed as an
// audit.k8s.io/v1 EventList to the server of a kubeconfig, in batches
// sent in the background (--audit-webhook-mode=batch, the default) or one
// by one while the request waits (blocking), retried with exponential
// backoff on connection errors, 429 and 5xx answers.

package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The webhook's modes.
const (
	ModeBatch    = "batch"
	ModeBlocking = "blocking"
)

// WebhookConfig is the webhook's flags, with kube-apiserver's defaults
// when zero.
type WebhookConfig struct {
	// ConfigFile is the kubeconfig whose current context's cluster is the
	// webhook (its server the URL POSTed to) and user its credentials.
	ConfigFile string
	// Mode is ModeBatch (default) or ModeBlocking.
	Mode string
	// BatchBufferSize is how many events wait to be batched (10000; more
	// are dropped), BatchMaxSize the most in one batch (400), BatchMaxWait
	// how long a batch waits to fill (30s).
	BatchBufferSize, BatchMaxSize int
	BatchMaxWait                  time.Duration
	// InitialBackoff is the wait before the first retry (10s), growing
	// 1.5 times each of the 4 retries.
	InitialBackoff time.Duration
	Log            *slog.Logger
}

// retries is how many times a failed POST is retried.
const retries = 4

// Webhook sends events to a webhook.
type Webhook struct {
	cfg    WebhookConfig
	url    string
	client *http.Client
	// queue holds the events waiting for a batch (batch mode); stop ends
	// the batching loop, done is closed when it has; sends are the
	// batches being sent, cancelled by cancel at Close if they take long.
	queue  chan json.RawMessage
	stop   chan struct{}
	done   chan struct{}
	sends  sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

// NewWebhook reads cfg's kubeconfig and, in batch mode, starts batching.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	cfg.Mode = cmpOr(cfg.Mode, ModeBatch)
	if cfg.Mode != ModeBatch && cfg.Mode != ModeBlocking {
		return nil, fmt.Errorf("invalid audit webhook mode %s, allowed modes are %q", cfg.Mode, ModeBatch+","+ModeBlocking)
	}
	if cfg.BatchBufferSize < 0 || cfg.BatchMaxSize < 0 || cfg.BatchMaxWait < 0 || cfg.InitialBackoff < 0 {
		return nil, fmt.Errorf("invalid audit batch webhook settings: the buffer size, max size, max wait and initial backoff must be positive")
	}
	cfg.BatchBufferSize = cmpOr(cfg.BatchBufferSize, 10000)
	cfg.BatchMaxSize = cmpOr(cfg.BatchMaxSize, 400)
	cfg.BatchMaxWait = cmpOr(cfg.BatchMaxWait, 30*time.Second)
	cfg.InitialBackoff = cmpOr(cfg.InitialBackoff, 10*time.Second)
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.ConfigFile}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	rc.Timeout = 30 * time.Second
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	w := &Webhook{cfg: cfg, url: rc.Host, client: client, stop: make(chan struct{}), done: make(chan struct{})}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	if cfg.Mode == ModeBatch {
		w.queue = make(chan json.RawMessage, cfg.BatchBufferSize)
		go w.batch()
	} else {
		close(w.done)
	}
	return w, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// process queues the event (batch: dropped if the queue is full, never
// blocking the request) or sends it (blocking).
func (w *Webhook) process(event []byte) {
	if w.queue == nil {
		w.send([]json.RawMessage{event})
		return
	}
	select {
	case w.queue <- event:
	default:
		w.cfg.Log.Error("audit webhook: the buffer is full, an event is dropped", "buffer-size", w.cfg.BatchBufferSize)
	}
}

// batch collects events into batches of BatchMaxSize or whatever came in
// BatchMaxWait, each sent in the background, until Close.
func (w *Webhook) batch() {
	defer close(w.done)
	for {
		events, stopped := w.collect()
		if len(events) > 0 {
			w.sends.Go(func() { w.send(events) })
		}
		if stopped {
			for len(w.queue) > 0 { // the last events, at Close
				events, _ := w.collect()
				w.sends.Go(func() { w.send(events) })
			}
			return
		}
	}
}

// collect is the next batch; stopped says Close was called.
func (w *Webhook) collect() (events []json.RawMessage, stopped bool) {
	timer := time.NewTimer(w.cfg.BatchMaxWait)
	defer timer.Stop()
	for len(events) < w.cfg.BatchMaxSize {
		select {
		case ev := <-w.queue:
			events = append(events, ev)
		case <-timer.C:
			return events, false
		case <-w.stop:
			for len(events) < w.cfg.BatchMaxSize && len(w.queue) > 0 {
				events = append(events, <-w.queue)
			}
			return events, true
		}
	}
	return events, false
}

// send POSTs events as one EventList, retrying with backoff.
func (w *Webhook) send(events []json.RawMessage) {
	body, err := json.Marshal(EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "audit.k8s.io/v1"}, Items: events})
	if err != nil {
		return
	}
	backoff := w.cfg.InitialBackoff
	for attempt := 0; ; attempt++ {
		retry, err := w.post(body)
		if err == nil {
			return
		}
		if !retry || attempt == retries {
			w.cfg.Log.Error("Error in audit plugin 'webhook' affecting "+fmt.Sprint(len(events))+" audit events", "err", err)
			return
		}
		jittered := backoff + time.Duration(rand.Float64()*0.2*float64(backoff))
		select {
		case <-time.After(jittered):
		case <-w.ctx.Done():
			w.cfg.Log.Error("audit webhook: shut down before "+fmt.Sprint(len(events))+" audit events could be sent", "err", err)
			return
		}
		backoff = backoff * 3 / 2
	}
}

// post sends one batch; retry says the failure may pass.
func (w *Webhook) post(body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return true, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	err = fmt.Errorf("the server answered %s: %s", resp.Status, bytes.TrimSpace(msg))
	return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500, err
}

// Close sends the queued events and waits for the sends, at most until
// their retries are done or a minute has passed.
func (w *Webhook) Close() error {
	select {
	case <-w.stop:
		return nil
	default:
	}
	close(w.stop)
	<-w.done
	sent := make(chan struct{})
	go func() { w.sends.Wait(); close(sent) }()
	select {
	case <-sent:
	case <-time.After(time.Minute):
		w.cancel()
		<-sent
	}
	w.cancel()
	return nil
}
