// Package encrypt keeps sessions encrypted at rest: a session.Store
// middleware (New) that seals what it writes to any store beneath it (a
// FileStore, a MemoryStore, pgstore) with AES-256-GCM and opens what it
// reads back, so that the files or rows hold no conversation in clear.
// It passes storetest like any store.
//
// It imports the session package and the module's internal naming rules.
//
// # Keys
//
// The host provides master keys (Key: an id and at least 32 random
// bytes) in a Keyring: the current key seals everything written, the
// others only open what they sealed. Nothing is derived from a password
// and no key is ever stored. Each session has keys of its own, derived
// with HKDF-SHA256 from the master key and the session id: one for
// AES-GCM, one for the nonces.
//
// Nonces are 96 bits, synthetic rather than random: an HMAC-SHA256 of
// the additional data and the plaintext under the session's nonce key
// (the SIV construction). The same entry sealed twice gives the same
// bytes, which stores need: a retried append is recognised by its bytes.
// Different data gets nonces that collide no more often than random
// ones. What this reveals is only that two sealed values are the same
// value at the same place.
//
// The additional data binds each sealed value to what it is (an entry, a
// title, the header), the key id, the session id and, for an entry, its
// id, parent id and timestamp: an entry cannot be moved to another
// session or another place in the tree, nor a title to another session.
//
// # What is sealed, what stays in clear
//
// Stores index some of what they keep, so it stays readable:
//
//   - an entry's envelope: id, parentId and timestamp (conditional
//     appends, tails and tree order need them). Its type and payload are
//     sealed: the stored entry is a custom entry of customType
//     SealedType ("agentsession.sealed") whose "sealed" member holds the
//     whole entry, base64 in strings of at most 64 KiB (so that no
//     store's limit on a string's length cuts one). A session_info entry
//     stays a session_info, its name sealed as a title, so that
//     listings show it;
//   - the metadata: the header's (session.Meta: project, user, app,
//     key/value pairs) and the entries that change it (customType
//     session.CustomMeta), which listings filter on. Do not put secrets
//     in metadata;
//   - of the header: id, version, timestamp, parent session and working
//     directory. The working directory is what ListOptions.Cwd and
//     session.Continue look for, and a FileStore names its directories
//     after it anyway. The title is sealed in place (a string starting
//     "sealed:1:"), so that a listing shows it opened; the members the
//     session package does not model (Header.Extra) are sealed together
//     into the member SealedType. The members left in clear are not
//     authenticated;
//   - the keys of shared state ("user:" and "app:" keys, see
//     session.SharedStateStore): each value is sealed on its own, with
//     keys derived for its scope and owner and bound to its key.
//
// Listings (List) open the titles. A session without a title of its own
// lists the title derived from its first user message, which the store
// beneath cannot see: the Store loads the session to derive it, once per
// change of the session, so listing many untitled sessions costs a load
// each; give sessions titles (SetTitle, AutoTitle) to avoid it.
//
// # What it does not do
//
// A Store is no session.BlobStore: blob stores address content by its
// SHA-256, which would identify the content, and keep it in clear.
// Images therefore stay inside the entries that show them, sealed with
// them (a FileStore does not move them to blobs: it cannot see them),
// and features that need the store's blobs (workspace snapshots,
// CollectBlobs) are not available through it. It is no
// session.Subscriber either: the changes of the store beneath name
// entries by role and type, which it cannot see.
//
// # Strict mode (recommended)
//
// NewWithOptions with Options.Strict reads only what the store sealed:
// an entry in clear (other than a metadata entry), a header whose title
// or members it does not model are in clear, a shared state value in
// clear are refused on every read (Load, LoadTail, so Open and a handle
// catching up, Context), with an *UnsealedError naming the session and
// the entry (errors.Is: ErrUnsealed, session.ErrCorrupt); listings show
// no title in clear; Reencrypt refuses to seal such a session. Without
// it (New, the lax mode) anyone who can write the files or rows beneath
// can add entries in clear, a user message or an assistant reply, that
// read as the conversation's own, and that Reencrypt then seals: entries
// and headers in clear are read as they are, which only a store still
// moving to encryption needs. The metadata (header and entries) stays in
// clear in either mode and is not authenticated.
//
// Sessions written in clear before the store was encrypted are sealed
// once, explicitly, with Store.SealPlaintext, which trusts what it finds
// in clear (see its documentation for what it refuses); a strict Store
// refuses them until then.
//
// Data that does not open (a key the keyring lacks, a wrong key under
// the right id, bytes changed) is an *OpenError, which errors.Is
// reports as session.ErrCorrupt, and as ErrUnknownKey or ErrAuth.
//
// # Rotating keys
//
//  1. Make the new key current, keeping the old one for reading:
//     NewKeyring(newKey, oldKey), and New with it, in every process
//     that opens the store. What they write from then on is sealed with
//     the new key; what the old key sealed still opens.
//  2. Seal every session again: Store.ReencryptAll, or Store.Reencrypt
//     per session (a strict Store refuses one holding anything in clear:
//     see SealPlaintext). Each is one conditional Rewrite of the log it read,
//     so a session another writer changes meanwhile fails with
//     session.ErrConflict and is left as it was: run it again. It
//     changes nothing on a session already sealed with the current key
//     only, so it can run until it reports none.
//  3. When no session is left under the old key, drop it:
//     NewKeyring(newKey). A session still sealed with it fails to open
//     with ErrUnknownKey, and can be opened again by putting the old key
//     back. Shared state is not sealed again by Reencrypt: each value is
//     sealed with the current key when it is next written; write again
//     (LoadState, then UpdateState of the same values, while no one else
//     writes them) those that must outlive the old key.
package encrypt
