// Continue tokens of paginated lists, in kube-apiserver's layout
// (k8s.io/apiserver's storage/continue.go): encoding, decoding, and checking
// a token's start key against the request's scope.

package storage

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"path"
	"strings"
)

// continueTokenVersion is the only token layout this server writes and
// reads. A new layout gets a new version; old versions keep decoding.
const continueTokenVersion = 1

// InconsistentContinueRV is the resourceVersion of a token handed out with a
// 410 Expired: it continues the list from where it stopped, at the newest
// revision (KEP-365 "Handling expired resource versions").
const InconsistentContinueRV = -1

// continueToken is the record inside a continue token. StartKey is relative
// to the resource prefix, so a token works on any replica and after a
// restart.
type continueToken struct {
	Version         int    `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

// Continuation is a decoded, validated continue token.
type Continuation struct {
	// ResourceVersion is the revision of the list's snapshot, or
	// InconsistentContinueRV.
	ResourceVersion int64
	// StartKey is the first key (relative to the resource) to return.
	StartKey string
}

// EncodeContinue returns the opaque token for a list at rv that continues
// at startKey (relative to the resource prefix).
func EncodeContinue(rv int64, startKey string) string {
	data, _ := json.Marshal(continueToken{Version: continueTokenVersion, ResourceVersion: rv, StartKey: startKey})
	return base64.RawURLEncoding.EncodeToString(data)
}

// DecodeContinue decodes and checks a token for a request over scope (the
// request's key prefix relative to the resource: "" or "namespace/").
// Besides the format it defends against tokens that reach outside the
// request: path traversal ("..", "."), empty segments, absolute keys and
// start keys that do not lie under scope.
func DecodeContinue(token, scope string) (Continuation, error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return Continuation{}, NewBadRequest("invalid continue token: not base64url: %v", err)
	}
	var c continueToken
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Continuation{}, NewBadRequest("invalid continue token: %v", err)
	}
	if c.Version != continueTokenVersion {
		return Continuation{}, NewBadRequest("invalid continue token: unknown version %d", c.Version)
	}
	if c.ResourceVersion <= 0 && c.ResourceVersion != InconsistentContinueRV {
		return Continuation{}, NewBadRequest("invalid continue token: resourceVersion %d", c.ResourceVersion)
	}
	if err := checkStartKey(c.StartKey, scope); err != nil {
		return Continuation{}, err
	}
	// One continuation has one token: reject every other spelling of it
	// (trailing data, duplicate or re-cased keys, loose base64).
	if EncodeContinue(c.ResourceVersion, c.StartKey) != token {
		return Continuation{}, NewBadRequest("invalid continue token: not in canonical form")
	}
	return Continuation{ResourceVersion: c.ResourceVersion, StartKey: c.StartKey}, nil
}

func checkStartKey(key, scope string) error {
	if key == "" {
		return NewBadRequest("invalid continue token: empty start key")
	}
	if strings.HasPrefix(key, "/") {
		return NewBadRequest("invalid continue token: start key %q is absolute", key)
	}
	// path.Clean removes "..", ".", "//" and a trailing "/": a clean key is
	// its own Clean.
	if path.Clean("/"+key) != "/"+key {
		return NewBadRequest("invalid continue token: start key %q is not a clean path", key)
	}
	if !strings.HasPrefix(key, scope) {
		return NewBadRequest("invalid continue token: start key %q is outside the requested collection", key)
	}
	return nil
}
