// Package informer keeps a consumer in step with a store, as client-go's
// informers do, but in-process over storage.Interface (the watch cache):
// list at resourceVersion "0" (from memory), then watch from the list's
// revision with bookmarks, re-watching when a watch ends and re-listing
// with backoff when it fails (410 Expired and the like).
package informer

import (
	"context"
	"log/slog"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// Backoff between failed lists and watches (and, for controllers, between
// failed attempts of their work).
const (
	MinBackoff = 100 * time.Millisecond
	MaxBackoff = 10 * time.Second
	// healthyWatch is how long a watch must last for the backoff to reset.
	healthyWatch = 10 * time.Second
)

// Handler receives a store's state: Replace with a whole list (at start
// and after every re-list), then Apply with each event after it
// (bookmarks included, so that the consumer may track the revision).
type Handler struct {
	Replace func(items []*object.Object, rv uint64)
	Apply   func(ev storage.Event)
}

// Run feeds h from store until ctx ends; name names the store in logs.
func Run(ctx context.Context, store storage.Interface, h Handler, name string, log *slog.Logger) {
	backoff := MinBackoff
	for ctx.Err() == nil {
		l, err := store.GetList(ctx, "", storage.ListOptions{ResourceVersion: "0"})
		if err == nil {
			h.Replace(l.Items, l.ResourceVersion)
			start := time.Now()
			err = watch(ctx, store, h, l.ResourceVersion)
			if time.Since(start) > healthyWatch {
				backoff = MinBackoff
			}
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("informer: re-listing after an error", "resource", name, "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, MaxBackoff)
	}
}

// watch applies events from revision rv on, re-watching when the store
// ends a watch cleanly; it returns the error that calls for a re-list.
func watch(ctx context.Context, store storage.Interface, h Handler, rv uint64) error {
	for {
		w, err := store.Watch(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(rv), AllowWatchBookmarks: true})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			if ev.Type == storage.EventError {
				w.Stop()
				return ev.Err
			}
			h.Apply(ev)
			rv = ev.ResourceVersion
		}
		w.Stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
