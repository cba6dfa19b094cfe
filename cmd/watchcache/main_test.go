package main

import (
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.WatchCache || !c.ConsistentListFromCache || !c.ConsistentGetFromCache || c.ConsistentReadsExplicit ||
		c.WaitWhileInitializing || c.ConsistentReadFallback || c.Port != 8080 || c.StorageInitializationTimeout != time.Minute {
		t.Fatalf("defaults: %+v", c)
	}
	c, err = parseFlags([]string{"--feature-gates=ConsistentGetFromCache=false,ResilientWatchCacheInitialization=false",
		"--consistent-read-fallback=etcd", "--watch-cache-sizes=pods#0,widgets.example.com#100"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.ConsistentListFromCache || c.ConsistentGetFromCache || !c.ConsistentReadsExplicit || !c.WaitWhileInitializing ||
		!c.ConsistentReadFallback || c.WatchCacheSizes["pods"] != 0 || c.WatchCacheSizes["widgets.example.com"] != 100 {
		t.Fatalf("parsed: %+v", c)
	}
	c, err = parseFlags([]string{"--feature-gates=ResilientWatchCacheInitialization=true"})
	if err != nil || c.ConsistentReadsExplicit {
		t.Fatalf("the resilience gate alone is not an explicit consistent-read setting: %+v, %v", c, err)
	}
	for _, bad := range [][]string{
		{"--feature-gates=Bogus=true"}, {"--feature-gates=ConsistentGetFromCache=maybe"},
		{"--consistent-read-fallback=sometimes"}, {"--watch-cache-sizes=pods"}, {"--watch-cache-sizes=pods#-1"},
		{"--etcd-prefix=registry"}, {"--etcd-certfile=x"}, {"extra"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%v) succeeded", bad)
		}
	}
}
