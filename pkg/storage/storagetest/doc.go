// Which conformance test covers which row of KEP-2340's LIST and WATCH tables
// and which rule of KEP-365.

package storagetest

// Which test covers which row. Subtests are named after the rows (e.g.
// "_RV_|_Exact_|_unset_|_N_"); run one with -run 'TestConformance/ListTable/_RV_|_Exact_'.
//
// LIST (KEP-2340's table; "etcd" column as implemented by etcd3, "cache"
// by cacher):
//
//	RV      | match        | continue | limit | test
//	unset   | unset        | unset    | any   | ListTable, ListPaging, ListPagingFiltered
//	unset   | unset        | token    | any   | ListTableContinue, ListContinueExpired, ListContinueTokenDefences
//	unset   | Exact        | any      | any   | ListTableFailsValidation
//	unset   | NotOlderThan | any      | any   | ListTableFailsValidation
//	0       | unset        | unset    | any   | ListTable
//	0       | unset        | token    | any   | ListTableContinue, ListContinueExpired
//	0       | Exact        | any      | any   | ListTableFailsValidation
//	0       | NotOlderThan | unset    | any   | ListTable
//	0       | NotOlderThan | token    | any   | ListTableContinue
//	N       | unset        | unset    | unset | ListTable, ListTooLargeResourceVersion
//	N       | unset        | unset    | N     | ListTable, ListTooLargeResourceVersion, ListExpired (legacy exact)
//	N       | unset        | token    | any   | ListTableContinue, ListContinueTokenDefences (N must be the token's)
//	N       | Exact        | unset    | any   | ListTable, ListTooLargeResourceVersion, ListExpired
//	N       | Exact        | token    | any   | ListTableFailsValidation
//	N       | NotOlderThan | unset    | any   | ListTable, ListTooLargeResourceVersion
//	N       | NotOlderThan | token    | any   | ListTableFailsValidation
//
// KEP-365 rules: limit and continue at one snapshot, remainingItemCount,
// filtered pages (ListPaging, ListPagingFiltered); token validation and
// path traversal (ListContinueTokenDefences, and pkg/storage's unit and
// fuzz tests); 410 and the inconsistent-continue token (ListExpired,
// ListContinueExpired); bad options (ListInvalidOptions).
//
// Streamed lists (ListOptions.Stream): ListStreamed (one revision, key
// order and selectors across chunks, with writes while the stream is
// open); Streamed runs the whole suite with every list streamed. The
// etcd3 stores of the suite read lists without a limit in chunks of
// ChunkKeys keys first, so that every such list spans several chunks.
//
// WATCH (KEP-2340's table):
//
//	RV      | match        | sendInitialEvents | test
//	unset   | unset        | unset             | WatchRow_Unset_Unset_Unset
//	unset   | unset        | false / true      | WatchTableFailsValidation
//	unset   | NotOlderThan | unset             | WatchTableFailsValidation
//	unset   | NotOlderThan | false             | WatchRow_Unset_NotOlderThan_False
//	unset   | NotOlderThan | true              | WatchRow_Unset_NotOlderThan_True
//	unset   | Exact        | any               | WatchTableFailsValidation
//	0       | unset        | unset             | WatchRow_Zero_Unset_Unset
//	0       | unset        | false / true      | WatchTableFailsValidation
//	0       | NotOlderThan | unset             | WatchTableFailsValidation
//	0       | NotOlderThan | false             | WatchRow_Zero_NotOlderThan_False
//	0       | NotOlderThan | true              | WatchRow_Zero_NotOlderThan_True
//	0       | Exact        | any               | WatchTableFailsValidation
//	N       | unset        | unset             | WatchRow_RV_Unset_Unset
//	N       | unset        | false / true      | WatchTableFailsValidation
//	N       | NotOlderThan | unset             | WatchTableFailsValidation
//	N       | NotOlderThan | false             | WatchRow_RV_NotOlderThan_False
//	N       | NotOlderThan | true              | WatchRow_RV_NotOlderThan_True
//	N       | Exact        | any               | WatchTableFailsValidation
//
// Beyond the rows: selectors turning updates into ADDED/DELETED
// (WatchFieldSelector, WatchLabelSelector), deletions with the last state
// (WatchDeletedCarriesLastState) or by key (WatchKeyOnlyDeletes), bookmarks (WatchBookmarks,
// WatchRequestProgress, WatchNoBookmarksUnlessAllowed), 410 for compacted
// starts (WatchCompacted), clean ends (WatchStop, WatchContextCancel).
// Sharded lists and watches (KEP-5866, ListOptions.Shard): ShardList (four
// shards of the uid space, whole and paged, at every kind of revision,
// with a label selector too: each the state restricted to its objects,
// together every object once), ShardListByNamespace, ShardWatch (a watch
// on a shard sees every event of its objects and nothing else),
// ShardGateOff (the ShardedListAndWatch gate off: selectors ignored).
// Lists and watches by name (metadata.name=N, which the stores serve as
// point lookups): ListByName (names in several namespaces, changed,
// deleted, created and absent, over all namespaces and one, alone and
// with other selectors, at every kind of revision, paged),
// ListByNameClusterScoped, WatchByName (that name's events only: updates,
// deletion and re-creation; not a key it prefixes), WatchByNameClusterScoped.
// Writes: Create, CreateConcurrentOneWins, Get (the GET rows: "", "0",
// "N"), GuaranteedUpdate, GuaranteedUpdateConcurrent, Delete,
// CurrentResourceVersion.
