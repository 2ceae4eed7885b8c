-- agentsession pgstore schema, version 7: appends of messages made
-- together (group commit).
--
-- A Store sends the appends of messages that come while others are in
-- flight together, in one call of agentsession_append_batch: one
-- statement, one transaction, one commit for all of them. Called once
-- per append, agentsession_append runs some ten statements of its own
-- (the lock, the checks, the insert, the updates, the notification),
-- and that work, more than the commit, is what an append of messages
-- costs the server; this function runs about as many for a whole batch.
--
-- Each member of the batch (an append: a session, its conditions, its
-- entries) gets the answer agentsession_append would have given it, in
-- the order of the batch: a member sees what the members before it
-- appended (IfLast, IfEmpty, the duplicates and the limits are checked
-- against the log as they left it), and a refused member changes
-- nothing. The function returns the answers, one per member ('' when
-- the append was made). It takes only appends that leave the fold as it
-- is but for the first user message (p_first_users, set when the
-- session has none), as agentsession_append does when its p_fold is
-- NULL: the others are made one by one.
--
-- The session rows are locked first, all at once, skipping those
-- another transaction holds: the members of such a session are answered
-- 'busy', and nothing is done for them (the Store makes them alone,
-- with agentsession_append, which waits for the lock). So a batch waits
-- for no row lock: an append to a session that a long rewrite holds
-- delays neither the other members nor the batches that follow, and
-- batches are in no deadlock with each other or anyone. A session that
-- does not exist is 'busy' too (agentsession_append then finds it
-- missing). The notifications come last, after the gate of version 6
-- (the same test as agentsession_notify's, once for the batch), which
-- stays the last lock a write waits for.
--
-- The members' entries come flattened: p_counts[i] entries for member
-- i, in order, in p_ids and p_raws. p_titles and p_first_users hold
-- NULL for a member without a title or a user message. The limits and
-- the origin are the Store's, the same for every member.
--
-- agentsession_append and the rest are unchanged: replicas running a
-- version 6 package keep working beside this one (their appends are made
-- one by one); New refuses a version 6 schema, so a replica that
-- restarts needs this package.

CREATE FUNCTION agentsession_append_batch(
    p_sessions text[], p_if_last text[], p_if_empty boolean[], p_counts integer[],
    p_ids text[], p_raws bytea[], p_titles bytea[], p_bytes bigint[], p_first_users bytea[],
    p_max_entries bigint, p_max_bytes bigint, p_origin text
) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
    n        integer := cardinality(p_sessions);
    res      text[] := array_fill(NULL::text, ARRAY[n]);
    -- The sessions locked, as the batch leaves them (k: an index in these).
    s_id     text[];
    s_count  integer[];
    s_last   text[];
    s_size   bigint[];
    s_gen    bigint[];
    s_first  bytea[];   -- the first user message, NULL while the session has none
    s_title  bytea[];   -- the last title appended, NULL if none
    s_moved  boolean[]; -- entries were appended
    -- Each entry's session, whether the session holds it already, and
    -- its seq (NULL unless its member was made).
    e_of     text[] := '{}';
    e_stored boolean[] := array_fill(false, ARRAY[cardinality(p_ids)]);
    e_seq    integer[] := array_fill(NULL::integer, ARRAY[cardinality(p_ids)]);
    -- Entries appended by the batch, as session id, newline, entry id
    -- (an id holds no newline).
    added    text[] := '{}';
    -- The notifications: member, entry counts before and after.
    n_member integer[] := '{}';
    n_from   integer[] := '{}';
    n_to     integer[] := '{}';
    i        integer;
    j        integer;
    k        integer;
    c        integer;
    off      integer := 0;
    dup      text;
BEGIN
    SELECT array_agg(id), array_agg(entry_count), array_agg(last_entry), array_agg(size), array_agg(generation),
            array_agg(CASE WHEN first_user = '' THEN NULL ELSE first_user END)
        INTO s_id, s_count, s_last, s_size, s_gen, s_first
        FROM (SELECT id, entry_count, last_entry, size, generation, first_user
            FROM agentsession_sessions WHERE id = ANY (p_sessions) FOR UPDATE SKIP LOCKED) s;
    s_title := array_fill(NULL::bytea, ARRAY[coalesce(cardinality(s_id), 0)]);
    s_moved := array_fill(false, ARRAY[coalesce(cardinality(s_id), 0)]);

    -- The entries their sessions hold already: one look-up in the
    -- (session_id, entry_id) index each (LIMIT keeps it one, whatever
    -- the planner thinks of the table).
    FOR i IN 1 .. n LOOP
        e_of := e_of || array_fill(p_sessions[i], ARRAY[p_counts[i]]);
    END LOOP;
    FOR j IN SELECT t.j FROM unnest(e_of, p_ids) WITH ORDINALITY AS t (s, id, j)
            CROSS JOIN LATERAL (SELECT 1 FROM agentsession_entries e
                WHERE e.session_id = t.s AND e.entry_id = t.id LIMIT 1) x LOOP
        e_stored[j] := true;
    END LOOP;

    -- The members, in order, as agentsession_append checks one.
    FOR i IN 1 .. n LOOP
        c := p_counts[i];
        off := off + c; -- the member's entries are off - c + 1 .. off
        k := array_position(s_id, p_sessions[i]);
        IF k IS NULL THEN
            res[i] := 'busy';
            CONTINUE;
        END IF;
        IF p_if_empty[i] AND s_count[k] > 0 THEN
            res[i] := 'notempty:' || s_last[k];
            CONTINUE;
        END IF;
        IF p_if_last[i] <> '' AND (s_count[k] = 0 OR p_if_last[i] <> s_last[k]) THEN
            res[i] := 'last:' || s_last[k];
            CONTINUE;
        END IF;
        IF c = 0 THEN
            res[i] := ''; -- an empty append: the conditions held, nothing to add
            CONTINUE;
        END IF;
        dup := NULL;
        FOR j IN off - c + 1 .. off LOOP
            IF e_stored[j] OR (p_sessions[i] || E'\n' || p_ids[j]) = ANY (added) THEN
                dup := p_ids[j];
                EXIT;
            END IF;
        END LOOP;
        IF dup IS NOT NULL THEN
            res[i] := 'dup:' || dup;
            CONTINUE;
        END IF;
        IF s_count[k]::bigint + c > p_max_entries THEN
            res[i] := 'toolarge:entries:' || (s_count[k]::bigint + c);
            CONTINUE;
        END IF;
        IF s_size[k] + p_bytes[i] > p_max_bytes THEN
            res[i] := 'toolarge:bytes:' || (s_size[k] + p_bytes[i]);
            CONTINUE;
        END IF;
        FOR j IN off - c + 1 .. off LOOP
            e_seq[j] := s_count[k] + j - (off - c);
            added := added || (p_sessions[i] || E'\n' || p_ids[j]);
        END LOOP;
        n_member := n_member || i;
        n_from := n_from || s_count[k];
        n_to := n_to || (s_count[k] + c);
        s_count[k] := s_count[k] + c;
        s_last[k] := p_ids[off];
        s_size[k] := s_size[k] + p_bytes[i];
        s_title[k] := coalesce(p_titles[i], s_title[k]);
        s_first[k] := coalesce(s_first[k], p_first_users[i]);
        s_moved[k] := true;
        res[i] := '';
    END LOOP;
    IF cardinality(n_member) = 0 THEN
        RETURN res;
    END IF;

    INSERT INTO agentsession_entries (session_id, seq, entry_id, raw)
        SELECT t.s, t.seq, t.id, t.raw FROM unnest(e_of, e_seq, p_ids, p_raws) AS t (s, seq, id, raw)
        WHERE t.seq IS NOT NULL;
    UPDATE agentsession_sessions s SET
        first_user = coalesce(u.first, s.first_user),
        entry_count = u.count,
        last_entry = u.last,
        size = u.size,
        title_utf8 = coalesce(u.title, s.title_utf8),
        updated_at = greatest(clock_timestamp(), s.updated_at + interval '1 microsecond')
    FROM unnest(s_id, s_count, s_last, s_size, s_title, s_first, s_moved) AS u (id, count, last, size, title, first, moved)
    WHERE s.id = u.id AND u.moved;

    -- As agentsession_notify (version 6), once for the batch: the gate,
    -- then, if a listener is alive, a notification per member made, in
    -- the order of the batch.
    PERFORM pg_advisory_xact_lock_shared(24935, hashtext(current_schema()));
    IF current_setting('transaction_isolation') <> 'read committed'
        OR EXISTS (SELECT 1 FROM agentsession_listeners l
            WHERE NOT pg_try_advisory_xact_lock_shared(24940, l.pid)) THEN
        PERFORM pg_notify('agentsession', json_build_object(
            'schema', current_schema(), 'id', p_sessions[t.m], 'kind', 'appended',
            'from', t.count_from, 'to', t.count_to, 'gen', s_gen[array_position(s_id, p_sessions[t.m])],
            'origin', p_origin, 'at', NULL::timestamptz)::text)
        FROM unnest(n_member, n_from, n_to) WITH ORDINALITY AS t (m, count_from, count_to, o)
        ORDER BY t.o;
    END IF;
    RETURN res;
END
$$;
