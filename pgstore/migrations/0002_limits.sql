-- agentsession pgstore schema, version 2: appends within session.Limits.
--
-- agentsession_append gains two limits of the store that calls it: the
-- most entries and the most bytes of a session's log (the header and a
-- newline per line included, as the size column counts them). They are
-- checked under the session row's lock, after the AppendOptions
-- conditions and the uniqueness of the ids (an append repeated after it
-- committed is 'dup', as before), so that concurrent appends cannot
-- together push a session past them. A NULL limit is no limit. Over one,
-- nothing is written and the answer says which and how far:
-- 'toolarge:entries:<entries after the append>',
-- 'toolarge:bytes:<bytes after the append>'. The length of each line
-- (MaxLineBytes) the caller checks before it sends them.

CREATE FUNCTION agentsession_append(
    p_session text, p_if_last text, p_if_empty boolean,
    p_ids text[], p_raws bytea[], p_title text, p_bytes bigint,
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
        title = coalesce(p_title, title),
        updated_at = greatest(clock_timestamp(), updated_at + interval '1 microsecond')
    WHERE id = p_session;
    RETURN '';
END
$$;

-- The function of version 1, for replicas still running it while others
-- upgrade: it appends within the default limits (session.DefaultMaxLineBytes,
-- DefaultMaxEntries, DefaultMaxLogBytes), so that they write nothing a
-- reader would refuse. Their package checks no line, so this does
-- ('toolarge:line:<bytes of the longest>'). Such a replica reports an
-- answer 'toolarge:...' as an unexpected one: an error, nothing written.
CREATE OR REPLACE FUNCTION agentsession_append(
    p_session text, p_if_last text, p_if_empty boolean,
    p_ids text[], p_raws bytea[], p_title text, p_bytes bigint
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    longest bigint;
BEGIN
    SELECT max(octet_length(r)) INTO longest FROM unnest(p_raws) AS r;
    IF longest > 67108864 THEN
        RETURN 'toolarge:line:' || longest;
    END IF;
    RETURN agentsession_append(p_session, p_if_last, p_if_empty, p_ids, p_raws, p_title, p_bytes,
        2000000, 1073741824);
END
$$;
