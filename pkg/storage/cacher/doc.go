// Package cacher is the watch cache: a storage.Interface that keeps one
// resource of etcd in memory and serves gets, lists and watches from it,
// with the consistency guarantees of reading etcd.
//
// # How it works
//
// A reflector lists the resource from etcd at one revision (a stream of
// chunks, see etcd3), then watches from that revision, applying events in revision
// order to a copy-on-write B-tree of object records (pkg/object: ready
// bytes, decoded once) and B-tree secondary indexes. After the events of
// each revision a snapshot (an O(1) clone) is published; snapshots are kept
// for the history window, within a capacity, and dropped when etcd compacts
// their revisions. Readers take the newest snapshot, or the one holding an
// exact revision, without locks; nothing they do blocks the reflector.
//
// A list or watch by name (field selector metadata.name=N) is a point
// lookup: lists read the one key the name can have in the scope (one per
// namespace over all namespaces), watchers are filed under the name so
// that an event reaches only those of its object's name (byname.go,
// dispatch.go).
//
// Where each read is served is one table, decisions in decide.go.
//
// # Deliberate differences from the etcd3 store
//
// Every row of the list and watch tables passes the same conformance suite
// (storagetest) against both; the differences allowed there are:
//
//   - resourceVersion "0" (any) lists and gets reflect the cache's newest
//     snapshot, which may be older than etcd's newest revision (etcd3 reads
//     the newest). Limit and continue are honoured (upstream ignores the
//     limit for "0").
//   - Continue tokens point at the next matching object, so a filtered
//     list ends without a trailing empty page; etcd3 points after the last
//     object it examined. Tokens of either store work on the other.
//   - Exact-revision lists and continuations of revisions etcd has
//     compacted are answered from a snapshot as long as the cache keeps it
//     (until it notices the compaction, within CompactionPollInterval);
//     the answer is exactly the state at that revision, where etcd would
//     answer 410 Expired.
//   - A list or get with resourceVersion N (not older than, or exact) that
//     is ahead of the cache waits up to 3 s for the cache to reach N, then
//     fails with 504 and Retry-After: 1; etcd3 fails at once when N is
//     ahead of etcd.
//   - Filtered lists scan memory without the etcd3 store's bound on range
//     reads, so a page is always full (limit items) when more exist.
//   - A list served from memory is complete even when the caller asked
//     for a stream (ListOptions.Stream): its objects are in memory anyway.
//     The lists the cache delegates to etcd (not ready, gate off,
//     fallback, exact revisions older than its snapshots, while found
//     inconsistent) are etcd3's, streamed in chunks when asked.
//   - A revision written by a multi-key etcd transaction is applied event
//     by event; a snapshot is published only after the revision's last
//     event that the watch has delivered, which is the whole revision
//     except when the watch delivers a revision's events with a pause
//     between them (the upstream watch cache applies such revisions event
//     by event too). This server writes one key per transaction.
package cacher
