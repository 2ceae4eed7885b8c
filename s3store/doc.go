// Package s3store keeps sessions, and their blobs, on object storage
// through the S3 API: AWS S3 or any server that implements S3's
// conditional writes. A host with no local disk (a stateless pod, a
// serverless function) or several machines continuing one session opens
// a Store on a bucket and uses it as any other session.Store:
//
//	store, err := s3store.Open(ctx, s3store.Options{Bucket: "agent-sessions"})
//	sess, err := session.Create(ctx, store, nil)
//
// Credentials, region and endpoint are read the way the AWS SDK for Go
// v2 reads them (environment, shared files, instance roles), or come
// with a client the host made (Options.Client). No credential appears
// in an error or a log: errors name the bucket, the key, the HTTP
// status and the server's error code.
//
// A PostgreSQL store (pgstore) with its blobs on a bucket is
// WithBlobs(pg, blobs), blobs from OpenBlobs.
//
// # How a session is kept
//
// Every object is written once and never changed, except a session's
// head, which says where its log is and what a listing shows. The log
// is a chain of generations; a generation is a descriptor (the header
// and a list of segments, each a run of entries), then parts, one per
// write, at sequence numbers 1, 2, 3 ... An append is one PUT of the
// next part with If-None-Match: * — the server refuses it when another
// writer took that number first, and the store then reads what that
// writer wrote and decides again (IfLast, IfEmpty, a retried append).
// So writers in any number of processes are ordered by the server, and
// an append acknowledged is in the log.
//
// When a generation has Options.FoldParts appends, the writer that
// notices folds them: it writes a segment of their entries (merged with
// the segments before it while those are no more than twice its size,
// so that a session has a logarithmic number of segments), a new
// generation's descriptor, and then a marker at the old generation's
// next number that names the new one. The marker is the commit: a fold
// that loses the race to an append is dropped, and the next writer
// folds. Rewrite (a prune, a migration) is a new generation in the same
// way, conditional on the log the caller read; Delete, Archive and a
// compaction mark are parts too, so that DeleteIfUnchanged and
// ArchiveIfUnchanged are one step with respect to appends.
//
// What a fold, rewrite or delete replaced stays for Options.Grace (an
// hour by default), and a writer reads a session's head again before it
// writes when it last read it more than half of that ago: a writer can
// never write where no one reads. Purge removes the objects of deleted
// sessions once their grace has passed; the replaced generations of a
// live session go with its later writes.
//
// # Reading
//
// A Store keeps the logs it read (Options.CacheBytes) and goes on from
// where it was: a Load of a session it holds is two requests (the head,
// and the absence of the next part), a first Load reads the head, the
// descriptor, the segments and parts side by side. Listing reads the
// heads that changed since the index object (index.json) was written,
// so a listing of 1,000 unchanged sessions is three requests. The head
// is moved after each write (a second request per append): a writer that
// dies between the two leaves a listing that lags until the session's
// next write or load, never a log that does.
//
// # Events
//
// Subscribe delivers the store's own changes as they happen and the
// changes of other processes by polling (Options.PollInterval, one
// second by default): each poll lists the heads, and reads the parts of
// each session whose head moved.
//
// # Servers
//
// The store needs PutObject with If-None-Match: * and If-Match (S3's
// conditional writes, on AWS since 2024), DeleteObject with If-Match,
// GetObject, HeadObject, ListObjectsV2 and HeadBucket; nothing else (no
// versioning, no multipart, no CopyObject). Its tests run the module's
// conformance suite (storetest) against the Versity S3 Gateway, which
// .ci/run builds and starts, after a test that the server refuses a
// conflicting conditional write: a server that ignored the header would
// fail it. SeaweedFS 4.53 passes the same probe of conditional writes.
// A server that accepted the header and did not honour it would lose
// appends: do not use one.
//
// It imports the session package, storekit and the AWS SDK.
package s3store
