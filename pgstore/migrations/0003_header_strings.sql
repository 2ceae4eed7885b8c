-- agentsession pgstore schema, version 3: a header's strings kept exactly.
--
-- Every store keeps a header's working directory, title and parent as a
-- JSON string holds them (session.StoredString): valid UTF-8, NUL and
-- other control characters included. A text column cannot hold NUL, so
-- the columns become bytea holding the string's UTF-8 bytes, and are
-- renamed: cwd_utf8, title_utf8, parent_session_utf8. The rename is on
-- purpose. An older package would bind its strings to a bytea column as
-- bytea's text input, which reads backslashes as escapes ('a\\b' would
-- be stored as 'a\b', 'C:\Users' refused); under the new names its
-- Create, Rewrite and List fail (undefined column) instead. Its Load,
-- LoadTail, Append, Delete, Archive and Restore keep working.
--
-- Existing values are converted losslessly: convert_to(..., 'UTF8') gives
-- the UTF-8 bytes of what the text column held (in a UTF8 database, its
-- bytes as they are). ALTER ... TYPE rewrites agentsession_sessions once
-- (one row per session; the entries are not touched) and rebuilds its
-- indexes, agentsession_sessions_cwd on the new column, under the table's
-- ACCESS EXCLUSIVE lock, which Migrate's transaction holds to the end.
--
-- parent_id stays text: the session id that parent_session names
-- (session.ParentID), or '' when that is not a valid session id, which
-- no listing's filter can ask for.

ALTER TABLE agentsession_sessions
    ALTER COLUMN cwd TYPE bytea USING convert_to(cwd, 'UTF8'),
    ALTER COLUMN title DROP DEFAULT,
    ALTER COLUMN title TYPE bytea USING convert_to(title, 'UTF8'),
    ALTER COLUMN title SET DEFAULT ''::bytea,
    ALTER COLUMN parent_session DROP DEFAULT,
    ALTER COLUMN parent_session TYPE bytea USING convert_to(parent_session, 'UTF8'),
    ALTER COLUMN parent_session SET DEFAULT ''::bytea;
ALTER TABLE agentsession_sessions RENAME COLUMN cwd TO cwd_utf8;
ALTER TABLE agentsession_sessions RENAME COLUMN title TO title_utf8;
ALTER TABLE agentsession_sessions RENAME COLUMN parent_session TO parent_session_utf8;

-- agentsession_append as in version 2, but for the title (the name of
-- the last session_info entry that sets one, NULL if none does) as the
-- UTF-8 bytes the title_utf8 column holds. It has the signature of
-- version 2 but for that parameter, so callers cast it ($6::bytea):
-- an argument of unknown type resolves to the text function below.
CREATE FUNCTION agentsession_append(
    p_session text, p_if_last text, p_if_empty boolean,
    p_ids text[], p_raws bytea[], p_title bytea, p_bytes bigint,
    p_max_entries bigint, p_max_bytes bigint
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    s_count integer;
    s_last  text;
    s_size  bigint;
    dup     text;
BEGIN
    SELECT entry_count, last_entry, size INTO s_count, s_last, s_size
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
    UPDATE agentsession_sessions SET
        entry_count = s_count + cardinality(p_ids),
        last_entry = p_ids[cardinality(p_ids)],
        size = s_size + p_bytes,
        title_utf8 = coalesce(p_title, title_utf8),
        updated_at = greatest(clock_timestamp(), updated_at + interval '1 microsecond')
    WHERE id = p_session;
    RETURN '';
END
$$;

-- The function of version 2, for replicas still running it while others
-- upgrade (and, through it, the version 1 function): the same append,
-- its title (text, which holds no NUL) passed on as UTF-8 bytes.
CREATE OR REPLACE FUNCTION agentsession_append(
    p_session text, p_if_last text, p_if_empty boolean,
    p_ids text[], p_raws bytea[], p_title text, p_bytes bigint,
    p_max_entries bigint, p_max_bytes bigint
) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN agentsession_append(p_session, p_if_last, p_if_empty, p_ids, p_raws,
        convert_to(p_title, 'UTF8'), p_bytes, p_max_entries, p_max_bytes);
END
$$;
