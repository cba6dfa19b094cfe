// --token-auth-file: kube-apiserver's static token CSV file and the lookup of
// a bearer token's user.

package authn

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/watchcache/watchcache/pkg/auth/user"
)

// TokenFile is the static tokens of --token-auth-file.
type TokenFile struct {
	users map[string]*user.Info
}

// LoadTokenFile reads kube-apiserver's token file: CSV lines of token,
// user name, user uid and optionally a quoted comma-separated list of
// groups; further columns are ignored. A line that does not parse, lacks a
// column or repeats a token is an error naming the file and line.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	tf := &TokenFile{users: map[string]*user.Info{}}
	for {
		record, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("token file %s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if len(record) < 3 {
			return nil, fmt.Errorf("token file %s:%d: %d columns, want at least 3 (token, user name, uid)", path, line, len(record))
		}
		token, name := record[0], record[1]
		if token == "" || name == "" {
			return nil, fmt.Errorf("token file %s:%d: empty token or user name", path, line)
		}
		if _, dup := tf.users[token]; dup {
			return nil, fmt.Errorf("token file %s:%d: a token given on an earlier line", path, line)
		}
		u := &user.Info{Name: name, UID: record[2]}
		if len(record) >= 4 {
			for _, g := range strings.Split(record[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		tf.users[token] = u
	}
	return tf, nil
}

// Lookup returns the user of token.
func (tf *TokenFile) Lookup(token string) (*user.Info, bool) {
	if tf == nil {
		return nil, false
	}
	u, ok := tf.users[token]
	return u, ok
}
