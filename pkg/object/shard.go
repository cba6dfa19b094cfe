// ShardHash: the FNV-1a 64-bit hash that places an object in a shard of
// KEP-5866's shardSelector.

package object

// The 64-bit FNV-1a parameters (the offset basis and the prime).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// ShardHash is the hash that places an object in the shards of a shard
// selector (KEP-5866, ListOptions.shardSelector): the 64-bit FNV-1a hash of
// a field's value (metadata.uid or metadata.namespace), as
// k8s.io/apimachinery/pkg/sharding.HashField computes it (which returns it
// in hex). It is written out here to hash a string without allocating.
func ShardHash(s string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}
