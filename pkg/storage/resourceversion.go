// Parsing and formatting resourceVersions (strict decimal).

package storage

import (
	"math"
	"strconv"
)

// ParseResourceVersion parses a resourceVersion strictly: decimal digits
// only (no sign, spaces or leading zeros except "0" itself), at most
// math.MaxInt64 (etcd revisions are int64). The empty string is not a
// resourceVersion; callers decide what "unset" means.
func ParseResourceVersion(s string) (uint64, error) {
	if s == "" {
		return 0, NewBadRequest("resourceVersion is empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, NewBadRequest("invalid resourceVersion %q: must be a decimal number", s)
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, NewBadRequest("invalid resourceVersion %q: leading zeros", s)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > math.MaxInt64 {
		return 0, NewBadRequest("invalid resourceVersion %q: out of range", s)
	}
	return v, nil
}

// FormatResourceVersion is the inverse of ParseResourceVersion.
func FormatResourceVersion(rv uint64) string { return strconv.FormatUint(rv, 10) }
