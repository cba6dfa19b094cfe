// Package flowcontrol is API Priority and Fairness (APF) as kube-apiserver
// 1.37 serves it: every request is classified by the FlowSchemas
// (flowcontrol.apiserver.k8s.io/v1) into a priority level and a flow, each
// level holds a share of the server's concurrency (--max-requests-inflight
// + --max-mutating-requests-inflight) by its nominalConcurrencyShares,
// lends and borrows seats by lendablePercent and borrowingLimitPercent,
// and queues its requests fairly per flow (shuffle sharding, fair queuing
// by seats), answering 429 with Retry-After when a queue is full or a
// request waited too long.
//
// The parts, one file each: bootstrap.go keeps the mandatory and suggested
// objects (bootstrap.json, recorded from kube-apiserver) in the stores;
// config.go follows the stores and turns the objects into classification
// rules and levels, and keeps the FlowSchemas' Dangling condition;
// classify.go matches a request to a FlowSchema; dispatch.go is the
// levels' seats, queues and borrowing; estimate.go is a request's width in
// seats; filter.go is the HTTP filter; metrics.go the
// apiserver_flowcontrol_* metrics.
package flowcontrol
