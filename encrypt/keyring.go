package encrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// MinSecretBytes is the least size of a master key's secret.
const MinSecretBytes = 32

// Key is a master key: a secret the host keeps (in a key management
// service, a file only it reads, an environment variable), and the id
// that the sealed data names it by.
type Key struct {
	// ID names the key in what it sealed: 1 to 32 ASCII letters, digits,
	// '-' and '_'. It is not secret.
	ID string
	// Secret is at least MinSecretBytes bytes of uniformly random data
	// (crypto/rand), not a password.
	Secret []byte
}

// Keyring holds the master keys of a Store: the current one, which
// seals everything written, and older ones, which only open what they
// sealed. It is immutable and safe for concurrent use; to rotate, make a
// new one (see the package documentation).
type Keyring struct {
	current string
	secrets map[string][]byte

	mu    sync.Mutex
	cache map[derivedFor]*sealer
}

// maxCachedKeys bounds the per-session keys a Keyring keeps derived.
const maxCachedKeys = 4096

type derivedFor struct{ key, session string }

// NewKeyring returns a keyring whose current key is current, that also
// opens what the older keys sealed. Ids must be valid and distinct and
// secrets long enough. The secrets are copied.
func NewKeyring(current Key, older ...Key) (*Keyring, error) {
	k := &Keyring{current: current.ID, secrets: map[string][]byte{}, cache: map[derivedFor]*sealer{}}
	for _, key := range append([]Key{current}, older...) {
		if err := validKeyID(key.ID); err != nil {
			return nil, err
		}
		if len(key.Secret) < MinSecretBytes {
			return nil, fmt.Errorf("encrypt: key %s: a secret of %d bytes, at least %d needed", key.ID, len(key.Secret), MinSecretBytes)
		}
		if _, dup := k.secrets[key.ID]; dup {
			return nil, fmt.Errorf("encrypt: key %s given twice", key.ID)
		}
		k.secrets[key.ID] = append([]byte(nil), key.Secret...)
	}
	return k, nil
}

// Current returns the id of the key that seals what is written.
func (k *Keyring) Current() string { return k.current }

// Has reports whether the keyring holds the key id.
func (k *Keyring) Has(id string) bool {
	_, ok := k.secrets[id]
	return ok
}

func validKeyID(id string) error {
	if id == "" || len(id) > 32 {
		return fmt.Errorf("encrypt: key id %q: 1 to 32 characters", id)
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("encrypt: key id %q: only ASCII letters, digits, '-' and '_'", id)
		}
	}
	return nil
}

// ErrUnknownKey is data sealed with a key the keyring does not hold.
var ErrUnknownKey = errors.New("encrypt: sealed with a key the keyring does not hold")

// ErrAuth is sealed data that does not open: a wrong key under the
// right id, or data changed since it was sealed.
var ErrAuth = errors.New("encrypt: message authentication failed (wrong key, or the data was changed)")

// sealer seals and opens the data of one session under one master key.
type sealer struct {
	key   string
	aead  cipher.AEAD
	nonce []byte // the HMAC key of the synthetic nonces
}

// sealer returns the sealer of session under the key id, derived with
// HKDF-SHA256 from the key's secret and the session id.
func (k *Keyring) sealer(id, session string) (*sealer, error) {
	secret, ok := k.secrets[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, id)
	}
	k.mu.Lock()
	s, ok := k.cache[derivedFor{id, session}]
	k.mu.Unlock()
	if ok {
		return s, nil
	}
	okm, err := hkdf.Key(sha256.New, secret, nil, "agentsession/encrypt/v1 session "+session, 64)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(okm[:32])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	s = &sealer{key: id, aead: aead, nonce: okm[32:]}
	k.mu.Lock()
	if len(k.cache) >= maxCachedKeys {
		clear(k.cache)
	}
	k.cache[derivedFor{id, session}] = s
	k.mu.Unlock()
	return s, nil
}

// seal encrypts plaintext bound to ad, and returns nonce || ciphertext.
// The nonce is synthetic: the first 96 bits of an HMAC-SHA256, under a
// key of its own, of ad and plaintext. The same data sealed twice gives
// the same bytes (a retried append stays a retry); different data gets
// different nonces but with the chance of a collision of random ones.
func (s *sealer) seal(plaintext, ad []byte) []byte {
	m := hmac.New(sha256.New, s.nonce)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(ad)))
	m.Write(n[:])
	m.Write(ad)
	m.Write(plaintext)
	nonce := m.Sum(nil)[:s.aead.NonceSize()]
	out := make([]byte, 0, len(nonce)+len(plaintext)+s.aead.Overhead())
	out = append(out, nonce...)
	return s.aead.Seal(out, nonce, plaintext, ad)
}

// open undoes seal.
func (s *sealer) open(box, ad []byte) ([]byte, error) {
	ns := s.aead.NonceSize()
	if len(box) < ns+s.aead.Overhead() {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrAuth, len(box))
	}
	out, err := s.aead.Open(nil, box[:ns], box[ns:], ad)
	if err != nil {
		return nil, ErrAuth
	}
	return out, nil
}

// additionalData binds a sealed value to where it belongs: what kind of
// value it is, the session, the key, and for an entry its envelope.
func additionalData(kind, key, session string, more ...string) []byte {
	ad := []byte("agentsession.sealed/1")
	for _, s := range append([]string{kind, key, session}, more...) {
		ad = binary.AppendUvarint(ad, uint64(len(s)))
		ad = append(ad, s...)
	}
	return ad
}
