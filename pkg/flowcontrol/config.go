// The configuration: the FlowSchemas and priority levels followed from the
// watch cache, turned into classification rules and levels; the bootstrap
// objects kept; the FlowSchemas' Dangling condition.

package flowcontrol

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/watchcache/watchcache/pkg/informer"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ensureInterval is how often the bootstrap objects are ensured besides
// when a mandatory one changes (kube-apiserver: every minute).
const ensureInterval = time.Minute

// Config configures APF.
type Config struct {
	// Registry holds the FlowSchema and PriorityLevelConfiguration stores.
	Registry *resource.Registry
	// ServerConcurrencyLimit is the seats the levels share
	// (--max-requests-inflight + --max-mutating-requests-inflight).
	ServerConcurrencyLimit int
	// CountObjects, if not nil, counts the objects a list or watch of ri
	// would read: the watch cache's exact count for its scope; ok false
	// when it cannot tell (no cache, or not ready).
	CountObjects func(ri *requestinfo.Info) (n int, ok bool)
	Metrics      prometheus.Registerer
	Log          *slog.Logger
}

// Controller is APF: the configuration, the dispatcher and the filter
// (Handler).
type Controller struct {
	cfg       Config
	bootstrap *bootstrap
	fs, pl    kindStore
	d         *dispatcher
	metrics   *metrics

	mu sync.RWMutex
	// flowSchemas and priorityLevels are the stored objects by name.
	flowSchemas    map[string]*flowcontrolv1.FlowSchema
	priorityLevels map[string]*flowcontrolv1.PriorityLevelConfiguration
	// schemas are the FlowSchemas classification tries, in order: those
	// whose level exists.
	schemas []*flowSchema
	synced  [2]bool

	// ensureNow and statusNow wake the bootstrap and status loops.
	ensureNow, statusNow chan struct{}
}

// Start ensures the bootstrap objects, starts following the stores and
// returns once the stored configuration, bootstrap objects included, is in
// force.
func Start(ctx context.Context, cfg Config) (*Controller, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	b, err := loadBootstrap()
	if err != nil {
		return nil, err
	}
	of := func(plural string) kindStore {
		res := cfg.Registry.Lookup(flowcontrolv1.GroupName, "v1", plural)
		return kindStore{res: res, store: cfg.Registry.Store(res)}
	}
	m := newMetrics(cfg.Metrics)
	c := &Controller{cfg: cfg, bootstrap: b, fs: of("flowschemas"), pl: of("prioritylevelconfigurations"), d: newDispatcher(m), metrics: m,
		flowSchemas: map[string]*flowcontrolv1.FlowSchema{}, priorityLevels: map[string]*flowcontrolv1.PriorityLevelConfiguration{},
		ensureNow: make(chan struct{}, 1), statusNow: make(chan struct{}, 1)}
	c.rebuild() // the mandatory configuration until the stores are read
	if err := b.ensure(ctx, c.fs, c.pl); err != nil {
		return nil, fmt.Errorf("APF bootstrap configuration: %w", err)
	}
	synced := make(chan struct{})
	var once sync.Once
	follow := func(i int, ks kindStore, put func(*object.Object), del func(string)) {
		informer.Run(ctx, ks.store, informer.Handler{
			Replace: func(items []*object.Object, _ uint64) {
				c.mu.Lock()
				if i == 0 {
					clear(c.flowSchemas)
				} else {
					clear(c.priorityLevels)
				}
				for _, o := range items {
					put(o)
				}
				c.synced[i] = true
				done := c.seesBootstrapLocked()
				c.mu.Unlock()
				c.changed(true)
				if done {
					once.Do(func() { close(synced) })
				}
			},
			Apply: func(ev storage.Event) {
				if ev.Type == storage.EventBookmark {
					return
				}
				c.mu.Lock()
				if ev.Type == storage.EventDeleted {
					del(ev.Object.Key())
				} else {
					put(ev.Object)
				}
				done := c.seesBootstrapLocked()
				c.mu.Unlock()
				c.changed(mandatory[ev.Object.Key()])
				if done {
					once.Do(func() { close(synced) })
				}
			},
		}, "apf "+ks.res.Plural, cfg.Log)
	}
	go follow(0, c.fs, func(o *object.Object) { decodeInto(o, c.flowSchemas, cfg.Log) },
		func(name string) { delete(c.flowSchemas, name) })
	go follow(1, c.pl, func(o *object.Object) { decodeInto(o, c.priorityLevels, cfg.Log) },
		func(name string) { delete(c.priorityLevels, name) })
	go c.keepBootstrap(ctx)
	go c.keepStatus(ctx)
	select {
	case <-synced:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// seesBootstrapLocked reports whether both stores have been read and the
// bootstrap objects ensured are among what was read: the informers list
// from the cache, which may not have seen them yet.
func (c *Controller) seesBootstrapLocked() bool {
	if !c.synced[0] || !c.synced[1] {
		return false
	}
	for _, o := range c.bootstrap.objects {
		if o.Kind == "FlowSchema" && c.flowSchemas[o.Metadata.Name] == nil ||
			o.Kind == "PriorityLevelConfiguration" && c.priorityLevels[o.Metadata.Name] == nil {
			return false
		}
	}
	return true
}

// decodeInto decodes a stored object into byName.
func decodeInto[T any](o *object.Object, byName map[string]*T, log *slog.Logger) {
	v := new(T)
	if err := json.Unmarshal(o.JSON(), v); err != nil {
		log.Error("APF: skipping an object that does not decode", "key", o.Key(), "err", err)
		return
	}
	byName[o.Key()] = v
}

// changed rebuilds the configuration after a change of the stored objects,
// and wakes the status loop (and the bootstrap loop, if a mandatory object
// may have changed).
func (c *Controller) changed(mandatoryChanged bool) {
	c.rebuild()
	wake(c.statusNow)
	if mandatoryChanged {
		wake(c.ensureNow)
	}
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// rebuild computes the classification rules and levels from the stored
// objects. A mandatory object missing from the stores is used as
// bootstrap.json has it (as kube-apiserver does), so that every request
// has a schema and a level even before the stores are read.
func (c *Controller) rebuild() {
	c.mu.Lock()
	defer c.mu.Unlock()
	pls := map[string]*flowcontrolv1.PriorityLevelConfiguration{}
	for i := range c.bootstrap.priorityLevels {
		if pl := &c.bootstrap.priorityLevels[i]; mandatory[pl.Name] {
			pls[pl.Name] = pl
		}
	}
	for name, pl := range c.priorityLevels {
		pls[name] = pl
	}
	fss := map[string]*flowcontrolv1.FlowSchema{}
	for i := range c.bootstrap.flowSchemas {
		if fs := &c.bootstrap.flowSchemas[i]; mandatory[fs.Name] {
			fss[fs.Name] = fs
		}
	}
	for name, fs := range c.flowSchemas {
		fss[name] = fs
	}
	c.schemas = c.schemas[:0]
	for _, fs := range fss {
		if pl := pls[fs.Spec.PriorityLevelConfiguration.Name]; pl != nil {
			c.schemas = append(c.schemas, newFlowSchema(fs, pl.UID))
		}
	}
	slices.SortFunc(c.schemas, (*flowSchema).less)
	levels := make([]*flowcontrolv1.PriorityLevelConfiguration, 0, len(pls))
	for _, pl := range pls {
		levels = append(levels, pl)
	}
	slices.SortFunc(levels, func(a, b *flowcontrolv1.PriorityLevelConfiguration) int { return strings.Compare(a.Name, b.Name) })
	c.d.apply(levelSpecs(levels, c.cfg.ServerConcurrencyLimit))
}

// keepBootstrap ensures the bootstrap objects every ensureInterval and
// whenever a mandatory object changed.
func (c *Controller) keepBootstrap(ctx context.Context) {
	t := time.NewTicker(ensureInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.ensureNow:
		}
		if err := c.bootstrap.ensure(ctx, c.fs, c.pl); err != nil && ctx.Err() == nil {
			c.cfg.Log.Warn("APF: ensuring the bootstrap configuration", "err", err)
		}
	}
}

// keepStatus sets each FlowSchema's Dangling condition, as kube-apiserver
// does: True (NotFound) when its priority level does not exist, False
// (Found) when it does.
func (c *Controller) keepStatus(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.statusNow:
		}
		c.mu.RLock()
		if !c.synced[0] || !c.synced[1] {
			// Until both stores are read, a FlowSchema's level may only
			// seem missing: its condition would flap (NotFound, then
			// Found) at every start. The second store's read wakes us.
			c.mu.RUnlock()
			continue
		}
		var stale []flowcontrolv1.FlowSchemaCondition
		var names []string
		for name, fs := range c.flowSchemas {
			want := danglingCondition(fs, c.priorityLevels[fs.Spec.PriorityLevelConfiguration.Name] != nil)
			if have := findCondition(fs.Status.Conditions); have == nil || have.Status != want.Status || have.Reason != want.Reason ||
				have.Message != want.Message {
				stale, names = append(stale, want), append(names, name)
			}
		}
		c.mu.RUnlock()
		for i, name := range names {
			if err := c.setCondition(ctx, name, stale[i]); err != nil && ctx.Err() == nil && storage.CodeOf(err) != storage.ErrNotFound {
				c.cfg.Log.Warn("APF: setting a FlowSchema's Dangling condition", "flowschema", name, "err", err)
			}
		}
	}
}

func findCondition(conds []flowcontrolv1.FlowSchemaCondition) *flowcontrolv1.FlowSchemaCondition {
	for i := range conds {
		if conds[i].Type == flowcontrolv1.FlowSchemaConditionDangling {
			return &conds[i]
		}
	}
	return nil
}

// danglingCondition is the Dangling condition of fs in kube-apiserver's
// words.
func danglingCondition(fs *flowcontrolv1.FlowSchema, found bool) flowcontrolv1.FlowSchemaCondition {
	name := fs.Spec.PriorityLevelConfiguration.Name
	cond := flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, LastTransitionTime: metav1.Now(),
		Status: flowcontrolv1.ConditionFalse, Reason: "Found",
		Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", name)}
	if !found {
		cond.Status, cond.Reason = flowcontrolv1.ConditionTrue, "NotFound"
		cond.Message = fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", name)
	}
	return cond
}

// setCondition writes cond into the stored FlowSchema's conditions.
func (c *Controller) setCondition(ctx context.Context, name string, cond flowcontrolv1.FlowSchemaCondition) error {
	_, err := c.fs.store.GuaranteedUpdate(ctx, name, nil, func(cur *object.Object) ([]byte, error) {
		var obj map[string]any
		if err := json.Unmarshal(cur.Stored(), &obj); err != nil {
			return nil, err
		}
		data, err := json.Marshal(cond)
		if err != nil {
			return nil, err
		}
		var want map[string]any
		if err := json.Unmarshal(data, &want); err != nil {
			return nil, err
		}
		status := jsontree.Child(obj, "status")
		conds, _ := status["conditions"].([]any)
		kept := []any{}
		for _, x := range conds {
			if m, ok := x.(map[string]any); ok && m["type"] == string(cond.Type) {
				if m["status"] == want["status"] && m["reason"] == want["reason"] && m["message"] == want["message"] {
					return cur.Stored(), nil // set meanwhile
				}
				continue
			}
			kept = append(kept, x)
		}
		status["conditions"] = append(kept, want)
		return c.fs.res.Encode(obj)
	}, nil)
	return err
}
