-- agentsession pgstore schema, version 4: blobs.
--
-- The store becomes a session.BlobStore: content-addressed blobs (the
-- manifests and file contents of workspace snapshots) kept beside the
-- sessions that refer to them, one row each, whatever sessions share it.
-- ref is the reference, 'blob:sha256:' and the SHA-256 of data in
-- lowercase hex, which the store checks when it reads the row; size is
-- data's length, so that a listing reads no data; touched_at is when the
-- blob was last put, by the server's clock: a put of bytes already
-- stored sets it again, and a collection (session.CollectBlobs) deletes
-- only blobs no session refers to that were last put before its start
-- less a grace, with a DELETE conditional on touched_at, which the row
-- lock orders with the puts.
--
-- Nothing else changes: replicas still running a version 3 package keep
-- working during a rolling upgrade; they keep no blobs.

CREATE TABLE agentsession_blobs (
    ref        text        COLLATE "C" PRIMARY KEY
                           CHECK (ref ~ '^blob:sha256:[0-9a-f]{64}$'),
    data       bytea       NOT NULL,
    size       bigint      NOT NULL,
    touched_at timestamptz NOT NULL
);
