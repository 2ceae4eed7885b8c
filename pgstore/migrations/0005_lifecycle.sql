-- agentsession pgstore schema, version 5: lifecycle, metadata, shared
-- state and events (issue 16).
--
-- Archiving: archived_at replaces the boolean archived. A session
-- archived before the upgrade gets its updated_at as archive time (the
-- best time the database has: archiving never changed it). archived
-- stays, as a column generated from archived_at, so that replicas still
-- running a version 4 package keep listing (their Archive and Restore
-- fail: a generated column cannot be written). Archiving changes neither
-- the log nor updated_at.
--
-- Compactions: compacting_at is since when a compaction has been
-- running on the session (session.CompactionMarker), NULL when none is.
--
-- Listings without entries: fold holds the session's session.InfoFold
-- as JSON (the latest session_info name, the first user message's
-- derived title, the metadata updates, whether a compaction runs), which
-- the package folds in Go and writes in the transaction of every append
-- that changes it and of every rewrite; first_user holds the fold's
-- first user message (its derived title), which the append function sets
-- itself when it has none, so that the appends of messages stay one
-- statement. meta holds the session's metadata as JSON (session.Meta:
-- the header's, with the fold's updates applied), for listings; the
-- columns project_id, user_id, app and metadata_pairs hold it for the
-- filters of session.ListOptions, with an index each (user, project,
-- app; metadata by a GIN index for @>). Metadata can hold any string,
-- NUL included, which neither text nor jsonb can: the columns are bytea,
-- the UTF-8 bytes of the strings, and metadata_pairs has one element per
-- key, the key's length as a uvarint, the key and the value.
-- fold and meta are bytea too, JSON only the package reads.
--
-- fold is NULL until the package's Migrate has computed it for the
-- sessions that exist: it does, in Go, in the transaction of this
-- migration, reading each session's entries once. New sessions get '{}'.
--
-- Events: every write sends a notification on the channel
-- 'agentsession' in its own transaction, so that listeners receive them
-- in commit order and only for committed work: a small JSON payload
-- (the schema, the session, what happened, the entry count before and
-- after, the generation, and which store did it), never the entries.
--
-- Shared state: agentsession_state holds user and app state, a row per
-- key.

ALTER TABLE agentsession_sessions
    ADD COLUMN archived_at    timestamptz,
    ADD COLUMN compacting_at  timestamptz,
    ADD COLUMN fold           bytea,
    ADD COLUMN first_user     bytea   NOT NULL DEFAULT '',
    ADD COLUMN meta           bytea   NOT NULL DEFAULT '{}',
    ADD COLUMN project_id     bytea   NOT NULL DEFAULT '',
    ADD COLUMN user_id        bytea   NOT NULL DEFAULT '',
    ADD COLUMN app            bytea   NOT NULL DEFAULT '',
    ADD COLUMN metadata_pairs bytea[] NOT NULL DEFAULT '{}';
UPDATE agentsession_sessions SET archived_at = updated_at WHERE archived;
ALTER TABLE agentsession_sessions DROP COLUMN archived;
ALTER TABLE agentsession_sessions ALTER COLUMN fold SET DEFAULT '{}';
ALTER TABLE agentsession_sessions
    ADD COLUMN archived boolean GENERATED ALWAYS AS (archived_at IS NOT NULL) STORED;

CREATE INDEX agentsession_sessions_user ON agentsession_sessions (user_id, updated_at DESC, id DESC) WHERE user_id <> '';
CREATE INDEX agentsession_sessions_project ON agentsession_sessions (project_id, updated_at DESC, id DESC) WHERE project_id <> '';
CREATE INDEX agentsession_sessions_app ON agentsession_sessions (app, updated_at DESC, id DESC) WHERE app <> '';
CREATE INDEX agentsession_sessions_metadata ON agentsession_sessions USING gin (metadata_pairs);

CREATE TABLE agentsession_state (
    scope text  NOT NULL CHECK (scope IN ('user', 'app')),
    owner text  COLLATE "C" NOT NULL,
    key   text  COLLATE "C" NOT NULL,
    value jsonb NOT NULL,
    PRIMARY KEY (scope, owner, key)
);

-- agentsession_notify sends the notification of a change of session
-- p_session and returns its id: p_kind is 'created', 'appended',
-- 'rewritten', 'deleted', 'archived', 'unarchived' or 'compacting';
-- p_from and p_to the entry counts before and after; p_origin the store
-- that made it ('' for a replica of an older package); p_at the time of
-- a 'compacting' (NULL: the compaction ended).
CREATE FUNCTION agentsession_notify(
    p_session text, p_kind text, p_from integer, p_to integer, p_generation bigint, p_origin text,
    p_at timestamptz DEFAULT NULL
) RETURNS text LANGUAGE sql AS $$
    SELECT pg_notify('agentsession', json_build_object(
        'schema', current_schema(), 'id', p_session, 'kind', p_kind,
        'from', p_from, 'to', p_to, 'gen', p_generation, 'origin', p_origin, 'at', p_at)::text);
    SELECT p_session;
$$;

-- agentsession_append as in version 3, and: the fold. When p_fold is
-- NULL the caller found that the entries change nothing in it but,
-- maybe, the first user message (p_first_user, its derived title), set
-- when the session has none. Otherwise p_fold is the whole new fold,
-- folded by the caller from the fold it read under the row's lock (FOR
-- UPDATE, in the same transaction), and p_first_user, p_meta,
-- p_project_id and p_metadata_pairs what goes with it (user_id and app
-- only change with the header, in a rewrite). The append is notified.
CREATE FUNCTION agentsession_append(
    p_session text, p_if_last text, p_if_empty boolean,
    p_ids text[], p_raws bytea[], p_title bytea, p_bytes bigint,
    p_max_entries bigint, p_max_bytes bigint,
    p_first_user bytea, p_fold bytea, p_meta bytea, p_project_id bytea, p_metadata_pairs bytea[],
    p_origin text
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    s_count integer;
    s_last  text;
    s_size  bigint;
    s_gen   bigint;
    dup     text;
BEGIN
    SELECT entry_count, last_entry, size, generation INTO s_count, s_last, s_size, s_gen
        FROM agentsession_sessions WHERE id = p_session FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'notfound';
    END IF;
    IF p_if_empty AND s_count > 0 THEN
        RETURN 'notempty:' || s_last;
    END IF;
    IF p_if_last <> '' AND (s_count = 0 OR p_if_last <> s_last) THEN
        RETURN 'last:' || s_last;
    END IF;
    IF cardinality(p_ids) = 0 THEN
        RETURN ''; -- an empty append: the conditions held, nothing to add
    END IF;
    SELECT entry_id INTO dup FROM agentsession_entries
        WHERE session_id = p_session AND entry_id = ANY (p_ids) LIMIT 1;
    IF FOUND THEN
        RETURN 'dup:' || dup;
    END IF;
    IF s_count::bigint + cardinality(p_ids) > p_max_entries THEN
        RETURN 'toolarge:entries:' || (s_count::bigint + cardinality(p_ids));
    END IF;
    IF s_size + p_bytes > p_max_bytes THEN
        RETURN 'toolarge:bytes:' || (s_size + p_bytes);
    END IF;
    INSERT INTO agentsession_entries (session_id, seq, entry_id, raw)
        SELECT p_session, s_count + t.ord, t.id, t.raw
        FROM unnest(p_ids, p_raws) WITH ORDINALITY AS t (id, raw, ord);
    IF p_fold IS NOT NULL THEN
        UPDATE agentsession_sessions SET
            fold = p_fold, first_user = p_first_user, meta = p_meta, project_id = p_project_id,
            metadata_pairs = p_metadata_pairs
        WHERE id = p_session;
    END IF;
    UPDATE agentsession_sessions SET
        first_user = CASE WHEN first_user = '' AND p_fold IS NULL AND p_first_user IS NOT NULL
            THEN p_first_user ELSE first_user END,
        entry_count = s_count + cardinality(p_ids),
        last_entry = p_ids[cardinality(p_ids)],
        size = s_size + p_bytes,
        title_utf8 = coalesce(p_title, title_utf8),
        updated_at = greatest(clock_timestamp(), updated_at + interval '1 microsecond')
    WHERE id = p_session;
    PERFORM agentsession_notify(p_session, 'appended', s_count, s_count + cardinality(p_ids), s_gen, p_origin);
    RETURN '';
END
$$;

-- The function of version 3 (and, through it, those of versions 1 and
-- 2), for replicas still running an older package while others upgrade:
-- the same append, notified; it leaves the fold as it is (such a
-- replica does not fold), so a title or metadata it appends shows in
-- listings after the next rewrite of the session.
CREATE OR REPLACE FUNCTION agentsession_append(
    p_session text, p_if_last text, p_if_empty boolean,
    p_ids text[], p_raws bytea[], p_title bytea, p_bytes bigint,
    p_max_entries bigint, p_max_bytes bigint
) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN agentsession_append(p_session, p_if_last, p_if_empty, p_ids, p_raws, p_title, p_bytes,
        p_max_entries, p_max_bytes, NULL, NULL, NULL, NULL, NULL, '');
END
$$;
