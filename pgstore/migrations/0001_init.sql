-- agentsession pgstore schema, version 1.
--
-- One row per session, one row per entry. An entry's seed-format JSON is
-- kept as bytea, byte for byte (jsonb would reorder keys and drop
-- duplicates; text would refuse bytes that are not UTF-8), and listing
-- reads only agentsession_sessions.

CREATE TABLE agentsession_sessions (
    id             text        COLLATE "C" PRIMARY KEY, -- byte order, as the other stores list
    header         bytea       NOT NULL, -- the header line, byte for byte
    cwd            text        NOT NULL,
    title          text        NOT NULL DEFAULT '', -- latest session_info name, else the header's title
    parent_session text        NOT NULL DEFAULT '', -- as the header names it
    parent_id      text        NOT NULL DEFAULT '', -- session.ParentID(parent_session)
    created_at     timestamptz,                     -- the header's timestamp
    updated_at     timestamptz NOT NULL,
    archived       boolean     NOT NULL DEFAULT false,
    entry_count    integer     NOT NULL DEFAULT 0,
    last_entry     text        NOT NULL DEFAULT '', -- id of the last entry, for AppendOptions.IfLast
    size           bigint      NOT NULL,            -- bytes of the log in the seed format
    generation     bigint      NOT NULL DEFAULT 0   -- bumped by every Rewrite
);

CREATE INDEX agentsession_sessions_updated ON agentsession_sessions (updated_at DESC, id DESC);
CREATE INDEX agentsession_sessions_cwd ON agentsession_sessions (cwd, updated_at DESC, id DESC);
CREATE INDEX agentsession_sessions_parent ON agentsession_sessions (parent_id) WHERE parent_id <> '';

CREATE TABLE agentsession_entries (
    session_id text    NOT NULL REFERENCES agentsession_sessions (id) ON DELETE CASCADE,
    seq        integer NOT NULL, -- 1, 2, ... in log order
    entry_id   text    NOT NULL,
    raw        bytea   NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- Not unique: a log read from a file may repeat an id (the later line
-- wins), and Rewrite keeps it. Appends check uniqueness themselves, under
-- the session row's lock.
CREATE INDEX agentsession_entries_id ON agentsession_entries (session_id, entry_id);

-- agentsession_append appends entries in one round trip: it locks the
-- session row, checks the AppendOptions conditions and the uniqueness of
-- the new ids, inserts, and updates the row. It returns '' on success,
-- else why not: 'notfound', 'notempty:<last>', 'last:<last>', 'dup:<id>'.
--
-- Under READ COMMITTED (PostgreSQL's default, which pgstore needs) each
-- statement of a plpgsql function takes a new snapshot, so once the row
-- lock is held the checks see every entry the previous holder committed.
CREATE FUNCTION agentsession_append(
    p_session text, p_if_last text, p_if_empty boolean,
    p_ids text[], p_raws bytea[], p_title text, p_bytes bigint
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    s_count integer;
    s_last  text;
    dup     text;
BEGIN
    SELECT entry_count, last_entry INTO s_count, s_last
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
    INSERT INTO agentsession_entries (session_id, seq, entry_id, raw)
        SELECT p_session, s_count + t.ord, t.id, t.raw
        FROM unnest(p_ids, p_raws) WITH ORDINALITY AS t (id, raw, ord);
    UPDATE agentsession_sessions SET
        entry_count = s_count + cardinality(p_ids),
        last_entry = p_ids[cardinality(p_ids)],
        size = size + p_bytes,
        title = coalesce(p_title, title),
        updated_at = greatest(clock_timestamp(), updated_at + interval '1 microsecond')
    WHERE id = p_session;
    RETURN '';
END
$$;
