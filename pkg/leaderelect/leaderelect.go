// Package leaderelect runs work on one server at a time among servers
// sharing an etcd, as kube-controller-manager's --leader-elect does: the
// servers campaign with client-go's leaderelection for a
// coordination.k8s.io/v1 Lease, and the holder runs the work until it
// loses the Lease or shuts down.
//
// Who writes what: the Lease (in the server, kube-system/
// watchcache-controller-manager) is written only by the electors, each
// through its server's own lease store, as the system (no HTTP request, no
// admission): its spec (holderIdentity, leaseDurationSeconds, acquireTime,
// renewTime, leaseTransitions) exactly as client-go writes it, every write
// a read-modify-write conditioned on the resourceVersion read last, so that
// of two servers writing at once one gets a conflict and loses. Users read
// it (kubectl get lease -n kube-system) and, as in Kubernetes, whoever may
// write Leases in kube-system can disturb the election. The work run under
// the Lease (package controller's Manager) writes what it always wrote; the
// election only decides where it runs.
//
// Invariants: a server runs the work only while it holds the Lease, and
// the work's context ends when it stops holding it. A term starts only
// after the last one's work returned. On shutdown the work stops first and
// the Lease is then released (holderIdentity emptied), so that a successor
// takes over within its retry period instead of a lease duration, and
// never while this server's work still runs. As with any lease, a server
// that cannot renew stops its work within the renew deadline, before the
// lease duration after which another may take over: clocks must not run
// apart by more than the difference.
package leaderelect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/watchcache/watchcache/pkg/storage"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/leaderelection"
)

// kube-controller-manager's defaults.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Config is an election.
type Config struct {
	// Store is the coordination.k8s.io/v1 leases store; Namespace and Name
	// name the Lease, Key is its key in Store.
	Store           storage.Interface
	Namespace, Name string
	Key             string
	// Identity names this candidate in the Lease's holderIdentity (empty:
	// NewIdentity()).
	Identity string
	// LeaseDuration is how long others wait after the last renewal they
	// saw before taking over, RenewDeadline how long the holder tries to
	// renew before it gives up, RetryPeriod the time between tries (0:
	// kube-controller-manager's 15 s, 10 s and 2 s). The Lease records
	// whole seconds, so LeaseDuration is at least 1 s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Log                                       *slog.Logger
}

// NewIdentity is a candidate's identity as Kubernetes components make it:
// the host name, "_", a random UUID.
func NewIdentity() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + "_" + string(uuid.NewUUID())
}

// Elector campaigns for the Lease and runs work while it holds it.
type Elector struct {
	cfg  Config
	lock *leaseLock
	// leading is true while the work runs.
	leading atomic.Bool
	// term is held while a term's work runs: a term starts only once the
	// last one ended, and shutdown releases the Lease only after it.
	term sync.Mutex
}

// New checks cfg and makes an Elector.
func New(cfg Config) (*Elector, error) {
	if cfg.Store == nil || cfg.Name == "" || cfg.Key == "" {
		return nil, errors.New("leader election: no lease store or name")
	}
	if cfg.Identity == "" {
		cfg.Identity = NewIdentity()
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewDeadline == 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.RetryPeriod == 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	if cfg.LeaseDuration < time.Second {
		return nil, fmt.Errorf("leader election: lease duration %v is under a second (the Lease records whole seconds)", cfg.LeaseDuration)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	e := &Elector{cfg: cfg, lock: &leaseLock{store: cfg.Store, namespace: cfg.Namespace, name: cfg.Name, key: cfg.Key, identity: cfg.Identity}}
	// Checks the timings as client-go will.
	if _, err := leaderelection.NewLeaderElector(e.electionConfig(nil)); err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	return e, nil
}

// Identity is this candidate's identity.
func (e *Elector) Identity() string { return e.cfg.Identity }

// Leading says whether the work runs here now.
func (e *Elector) Leading() bool { return e.leading.Load() }

// Run campaigns until ctx ends, running work in each term with a context
// that ends when the term does (the Lease lost, or ctx ended); work must
// return soon after. Run returns once the last term's work returned and
// the Lease was released.
func (e *Elector) Run(ctx context.Context, work func(context.Context)) {
	ctx = logr.NewContextWithSlogLogger(ctx, e.cfg.Log)
	// The election's context ends only after the current term's work has
	// returned, so that the Lease (ReleaseOnCancel) is released after it.
	election, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	context.AfterFunc(ctx, func() {
		e.term.Lock()
		defer e.term.Unlock()
		stop()
	})
	lead := func(termCtx context.Context) {
		e.term.Lock()
		defer e.term.Unlock()
		if ctx.Err() != nil {
			return // shut down before the term began
		}
		termCtx, cancel := context.WithCancel(termCtx)
		defer context.AfterFunc(ctx, cancel)()
		defer cancel()
		e.cfg.Log.Info("leader election: leading; starting the controllers", "lease", e.lock.Describe(), "identity", e.cfg.Identity)
		e.leading.Store(true)
		work(termCtx)
		e.leading.Store(false)
		e.cfg.Log.Info("leader election: the controllers stopped", "lease", e.lock.Describe())
	}
	for election.Err() == nil {
		// A fresh elector per term: one that lost the Lease campaigns
		// anew, with nothing observed.
		le, err := leaderelection.NewLeaderElector(e.electionConfig(lead))
		if err != nil { // checked by New
			panic(err)
		}
		le.Run(election)
	}
	// The election ended only after ctx did, once the work of the term
	// then running had returned; a term whose goroutine starts later finds
	// ctx ended and runs nothing.
}

// electionConfig is client-go's configuration, leading with lead.
func (e *Elector) electionConfig(lead func(context.Context)) leaderelection.LeaderElectionConfig {
	if lead == nil {
		lead = func(context.Context) {}
	}
	return leaderelection.LeaderElectionConfig{
		Lock:            e.lock,
		Name:            e.cfg.Name,
		LeaseDuration:   e.cfg.LeaseDuration,
		RenewDeadline:   e.cfg.RenewDeadline,
		RetryPeriod:     e.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: lead,
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity != "" && identity != e.cfg.Identity {
					e.cfg.Log.Info("leader election: the controllers run on another server", "lease", e.lock.Describe(), "leader", identity)
				}
			},
		},
	}
}
