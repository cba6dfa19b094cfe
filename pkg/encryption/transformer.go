// The transformer of values written to and read from etcd, as
// k8s.io/apiserver's encryption at rest: the k8s:enc: prefix and the
// identity, aesgcm, aescbc and secretbox providers.

package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/nacl/secretbox"
)

// encryptedPrefix starts every encrypted value.
const encryptedPrefix = "k8s:enc:"

// Transformer encrypts a resource's values for etcd and decrypts them.
type Transformer struct {
	// providers in the configuration's order; the first writes.
	providers []provider
}

// provider is one key of one provider (or identity).
type provider interface {
	// prefix is what the provider's values start with ("" for identity).
	prefix() string
	seal(plain []byte, etcdKey string) ([]byte, error)
	open(sealed []byte, etcdKey string) ([]byte, error)
}

// ToStorage encrypts a value written at etcdKey with the first provider.
func (t *Transformer) ToStorage(plain []byte, etcdKey string) ([]byte, error) {
	p := t.providers[0]
	sealed, err := p.seal(plain, etcdKey)
	if err != nil {
		return nil, err
	}
	return append([]byte(p.prefix()), sealed...), nil
}

// FromStorage decrypts a value read at etcdKey with the provider its
// prefix names; stale says it was not written by the first provider (a
// rewrite would re-encrypt it).
func (t *Transformer) FromStorage(stored []byte, etcdKey string) (plain []byte, stale bool, err error) {
	for i, p := range t.providers {
		prefix := p.prefix()
		if prefix == "" {
			if bytes.HasPrefix(stored, []byte(encryptedPrefix)) {
				continue // identity does not read encrypted values
			}
		} else if !bytes.HasPrefix(stored, []byte(prefix)) {
			continue
		}
		plain, err := p.open(stored[len(prefix):], etcdKey)
		if err != nil {
			return nil, false, fmt.Errorf("decrypting with %s: %w", strings.TrimSuffix(prefix, ":"), err)
		}
		return plain, i != 0, nil
	}
	if bytes.HasPrefix(stored, []byte(encryptedPrefix)) {
		name, _, _ := strings.Cut(string(stored[len(encryptedPrefix):min(len(stored), 80)]), ":v1:")
		return nil, false, fmt.Errorf("value encrypted with %s, which the encryption configuration does not list", name)
	}
	return nil, false, errors.New("value is not encrypted and the encryption configuration has no identity provider")
}

// identity stores values as they are.
type identity struct{}

func (identity) prefix() string                          { return "" }
func (identity) seal(p []byte, _ string) ([]byte, error) { return p, nil }
func (identity) open(p []byte, _ string) ([]byte, error) { return p, nil }

// aesGCM is upstream's aesgcm: a random 12-byte nonce, then the sealed
// value with the etcd key as additional data.
type aesGCM struct {
	pfx  string
	aead cipher.AEAD
}

func newAESGCM(prefix string, key []byte) (provider, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &aesGCM{pfx: prefix, aead: aead}, nil
}

func (g *aesGCM) prefix() string { return g.pfx }

func (g *aesGCM) seal(plain []byte, etcdKey string) ([]byte, error) {
	out := make([]byte, g.aead.NonceSize(), g.aead.NonceSize()+len(plain)+g.aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		return nil, err
	}
	return g.aead.Seal(out, out, plain, []byte(etcdKey)), nil
}

func (g *aesGCM) open(sealed []byte, etcdKey string) ([]byte, error) {
	n := g.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("value too short")
	}
	return g.aead.Open(nil, sealed[:n], sealed[n:], []byte(etcdKey))
}

// aesCBC is upstream's aescbc: a random IV, then the PKCS#7-padded value
// in CBC mode (no authentication; upstream keeps it for compatibility).
type aesCBC struct {
	pfx   string
	block cipher.Block
}

func newAESCBC(prefix string, key []byte) (provider, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return &aesCBC{pfx: prefix, block: block}, nil
}

func (c *aesCBC) prefix() string { return c.pfx }

func (c *aesCBC) seal(plain []byte, _ string) ([]byte, error) {
	bs := aes.BlockSize
	pad := bs - len(plain)%bs
	out := make([]byte, bs+len(plain)+pad)
	if _, err := rand.Read(out[:bs]); err != nil {
		return nil, err
	}
	copy(out[bs:], plain)
	for i := bs + len(plain); i < len(out); i++ {
		out[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(c.block, out[:bs]).CryptBlocks(out[bs:], out[bs:])
	return out, nil
}

func (c *aesCBC) open(sealed []byte, _ string) ([]byte, error) {
	bs := aes.BlockSize
	if len(sealed) < 2*bs || len(sealed)%bs != 0 {
		return nil, errors.New("value is not a whole number of blocks")
	}
	out := make([]byte, len(sealed)-bs)
	cipher.NewCBCDecrypter(c.block, sealed[:bs]).CryptBlocks(out, sealed[bs:])
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs || pad > len(out) {
		return nil, errors.New("invalid padding")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errors.New("invalid padding")
		}
	}
	return out[:len(out)-pad], nil
}

// secretBox is upstream's secretbox: a random 24-byte nonce, then the box.
type secretBox struct {
	pfx string
	key [32]byte
}

func newSecretbox(prefix string, key []byte) (provider, error) {
	s := &secretBox{pfx: prefix}
	copy(s.key[:], key)
	return s, nil
}

func (s *secretBox) prefix() string { return s.pfx }

func (s *secretBox) seal(plain []byte, _ string) ([]byte, error) {
	var nonce [24]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	return secretbox.Seal(nonce[:], plain, &nonce, &s.key), nil
}

func (s *secretBox) open(sealed []byte, _ string) ([]byte, error) {
	if len(sealed) < 24 {
		return nil, errors.New("value too short")
	}
	var nonce [24]byte
	copy(nonce[:], sealed)
	plain, ok := secretbox.Open(nil, sealed[24:], &nonce, &s.key)
	if !ok {
		return nil, errors.New("box does not open")
	}
	return plain, nil
}
