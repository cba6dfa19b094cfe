package etcd3

// CompactOnce exposes one compaction step to the external tests.
var CompactOnce = (*Compactor).compactOnce
