-- agentsession pgstore schema, version 9: what a load by path needs
-- (issue 40: a resume reads the leaf's path back to its latest
-- compaction, not the whole session; see pathload.go).
--
-- Each entry row gains, as seq numbers of its session (0: none):
--   parent_seq  its parent's row (0 for a root)
--   depth       its depth in the tree (0 for a root)
--   flags       what a path load looks for (pathload.go, pathFlags):
--               1 a setting (thinking level, model, mode, injected
--               rule), 2 an assistant message naming its model, or one
--               that did not decode (16 is set too: a load that needs it
--               reads whole), 4 a compaction, 8 a leaf marker
--   set_seq     its nearest strict ancestor that is a setting
--   asst_seq    its nearest strict ancestor with flag 2
--   comp_seq    its nearest compaction, itself included
--   run_seq     the first row of its run: the longest range of rows
--               ending at it in which each row is the child of the row
--               before (a path is a few runs, each read as a range)
--   kept_id     a compaction's first kept entry id, NULL if none
-- All are NULL for a row whose place is unknown: written by an older
-- package, or whose parent is not an earlier row of known place (a
-- missing parent may come later, and the tree then links it: that is
-- for a whole read to decide), or whose id repeats (a Rewrite may keep
-- a log that repeats one). A known row's ancestors are all known, and
-- a known row never changes: appends refuse repeated ids, and a Rewrite
-- replaces every row.
--
-- The columns are added NULL (no table rewrite). A load by path finds
-- a NULL leaf and reads the whole session instead, then fills the rows
-- in the background (see Store.LoadPath). Replicas running a version 8
-- package keep working beside this schema: their functions' signatures
-- stay, and write rows of unknown place; their Rewrite copies rows
-- without the columns (NULL) as before.

ALTER TABLE agentsession_entries
    ADD COLUMN parent_seq integer,
    ADD COLUMN depth      integer,
    ADD COLUMN flags      smallint,
    ADD COLUMN set_seq    integer,
    ADD COLUMN asst_seq   integer,
    ADD COLUMN comp_seq   integer,
    ADD COLUMN run_seq    integer,
    ADD COLUMN kept_id    text;

-- agentsession_path_child returns the place of a new entry at p_seq with
-- flags p_flags (and compaction id p_kept), child of the row at
-- p_pseq (0 for a root) whose place is the rest of the arguments: the
-- columns in the order of the table, as an array
-- {parent_seq, depth, set_seq, asst_seq, comp_seq, run_seq}.
CREATE FUNCTION agentsession_path_child(
    p_seq integer, p_flags smallint,
    p_pseq integer, p_pdepth integer, p_pflags smallint, p_pset integer, p_passt integer, p_pcomp integer, p_prun integer
) RETURNS integer[] LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_pseq = 0 THEN
        ARRAY[0, 0, 0, 0, CASE WHEN p_flags & 4 <> 0 THEN p_seq ELSE 0 END, p_seq]
    ELSE ARRAY[
        p_pseq,
        p_pdepth + 1,
        CASE WHEN p_pflags & 1 <> 0 THEN p_pseq ELSE p_pset END,
        CASE WHEN p_pflags & 2 <> 0 THEN p_pseq ELSE p_passt END,
        CASE WHEN p_flags & 4 <> 0 THEN p_seq ELSE p_pcomp END,
        CASE WHEN p_pseq = p_seq - 1 THEN p_prun ELSE p_seq END]
    END
$$;

-- agentsession_append as in version 5, and the entries' places: for
-- each entry, p_pidx is the position in this append of its parent (0
-- when the parent is not among them: p_parents names it, '' for a
-- root, and it is looked up in the session), p_flags its flags as the
-- package reads them (-1: its place is unknown), p_kept a compaction's
-- first kept entry id.
CREATE FUNCTION agentsession_append(
    p_session text, p_if_last text, p_if_empty boolean,
    p_ids text[], p_raws bytea[], p_title bytea, p_bytes bigint,
    p_max_entries bigint, p_max_bytes bigint,
    p_first_user bytea, p_fold bytea, p_meta bytea, p_project_id bytea, p_metadata_pairs bytea[],
    p_origin text,
    p_pidx integer[], p_parents text[], p_flags smallint[], p_kept text[]
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    s_count integer;
    s_last  text;
    s_size  bigint;
    s_gen   bigint;
    dup     text;
    n       integer := cardinality(p_ids);
    place   integer[];
    c_pseq  integer[];
    c_depth integer[];
    c_set   integer[];
    c_asst  integer[];
    c_comp  integer[];
    c_run   integer[];
    c_flags smallint[];
    r       record;
    i       integer;
    k       integer;
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
    IF n = 0 THEN
        RETURN ''; -- an empty append: the conditions held, nothing to add
    END IF;
    SELECT entry_id INTO dup FROM agentsession_entries
        WHERE session_id = p_session AND entry_id = ANY (p_ids) LIMIT 1;
    IF FOUND THEN
        RETURN 'dup:' || dup;
    END IF;
    IF s_count::bigint + n > p_max_entries THEN
        RETURN 'toolarge:entries:' || (s_count::bigint + n);
    END IF;
    IF s_size + p_bytes > p_max_bytes THEN
        RETURN 'toolarge:bytes:' || (s_size + p_bytes);
    END IF;
    c_pseq := array_fill(NULL::integer, ARRAY[n]);
    c_depth := c_pseq; c_set := c_pseq; c_asst := c_pseq; c_comp := c_pseq; c_run := c_pseq;
    c_flags := array_fill(NULL::smallint, ARRAY[n]);
    FOR i IN 1 .. n LOOP
        place := NULL;
        k := p_pidx[i];
        IF p_flags[i] IS NULL OR p_flags[i] < 0 THEN
            NULL; -- unknown
        ELSIF k > 0 AND k < i THEN
            IF c_pseq[k] IS NOT NULL THEN
                place := agentsession_path_child(s_count + i, p_flags[i], s_count + k, c_depth[k], c_flags[k],
                    c_set[k], c_asst[k], c_comp[k], c_run[k]);
            END IF;
        ELSIF p_parents[i] = '' THEN
            place := agentsession_path_child(s_count + i, p_flags[i], 0, 0, 0::smallint, 0, 0, 0, 0);
        ELSE
            SELECT e.seq, e.depth, e.flags, e.set_seq, e.asst_seq, e.comp_seq, e.run_seq INTO r
                FROM agentsession_entries e WHERE e.session_id = p_session AND e.entry_id = p_parents[i]
                ORDER BY e.seq DESC LIMIT 1;
            IF FOUND AND r.depth IS NOT NULL THEN
                place := agentsession_path_child(s_count + i, p_flags[i], r.seq, r.depth, r.flags,
                    r.set_seq, r.asst_seq, r.comp_seq, r.run_seq);
            END IF;
        END IF;
        IF place IS NOT NULL THEN
            c_pseq[i] := place[1]; c_depth[i] := place[2]; c_set[i] := place[3];
            c_asst[i] := place[4]; c_comp[i] := place[5]; c_run[i] := place[6];
            c_flags[i] := p_flags[i];
        END IF;
    END LOOP;
    INSERT INTO agentsession_entries (session_id, seq, entry_id, raw,
            parent_seq, depth, flags, set_seq, asst_seq, comp_seq, run_seq, kept_id)
        SELECT p_session, s_count + t.ord, t.id, t.raw,
            t.pseq, t.depth, t.flags, t.sset, t.asst, t.comp, t.run, CASE WHEN t.pseq IS NULL THEN NULL ELSE t.kept END
        FROM unnest(p_ids, p_raws, c_pseq, c_depth, c_flags, c_set, c_asst, c_comp, c_run, p_kept)
            WITH ORDINALITY AS t (id, raw, pseq, depth, flags, sset, asst, comp, run, kept, ord);
    IF p_fold IS NOT NULL THEN
        UPDATE agentsession_sessions SET
            fold = p_fold, first_user = p_first_user, meta = p_meta, project_id = p_project_id,
            metadata_pairs = p_metadata_pairs
        WHERE id = p_session;
    END IF;
    UPDATE agentsession_sessions SET
        first_user = CASE WHEN first_user = '' AND p_fold IS NULL AND p_first_user IS NOT NULL
            THEN p_first_user ELSE first_user END,
        entry_count = s_count + n,
        last_entry = p_ids[n],
        size = s_size + p_bytes,
        title_utf8 = coalesce(p_title, title_utf8),
        updated_at = greatest(clock_timestamp(), updated_at + interval '1 microsecond')
    WHERE id = p_session;
    PERFORM agentsession_notify(p_session, 'appended', s_count, s_count + n, s_gen, p_origin);
    RETURN '';
END
$$;

-- agentsession_append_batch as in version 7, and the entries' places,
-- as agentsession_append (above) gives them: p_pidx, p_parents,
-- p_flags and p_kept by entry, flattened as p_ids; p_pidx counts in
-- the entry's member. A parent not in its member is looked for in the
-- session, then among the entries of the members made before it in the
-- batch (which are inserted at the end).
CREATE FUNCTION agentsession_append_batch(
    p_sessions text[], p_if_last text[], p_if_empty boolean[], p_counts integer[],
    p_ids text[], p_raws bytea[], p_titles bytea[], p_bytes bigint[], p_first_users bytea[],
    p_max_entries bigint, p_max_bytes bigint, p_origin text,
    p_pidx integer[], p_parents text[], p_flags smallint[], p_kept text[]
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
    -- The entries' places (as agentsession_append's), by entry, and the
    -- entry of each of added.
    c_pseq   integer[] := array_fill(NULL::integer, ARRAY[cardinality(p_ids)]);
    c_depth  integer[] := c_pseq;
    c_set    integer[] := c_pseq;
    c_asst   integer[] := c_pseq;
    c_comp   integer[] := c_pseq;
    c_run    integer[] := c_pseq;
    c_flags  smallint[] := array_fill(NULL::smallint, ARRAY[cardinality(p_ids)]);
    added_j  integer[] := '{}';
    place    integer[];
    r        record;
    q        integer;
    e_s      integer;
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
        -- The places, as agentsession_append finds them; a parent not
        -- in this member is looked for in the session, then among the
        -- entries of the members before it.
        FOR j IN off - c + 1 .. off LOOP
            e_s := s_count[k] + j - (off - c);
            place := NULL;
            q := p_pidx[j];
            IF p_flags[j] IS NULL OR p_flags[j] < 0 THEN
                NULL; -- unknown
            ELSIF q > 0 AND q < j - (off - c) THEN
                q := q + off - c;
                IF c_pseq[q] IS NOT NULL THEN
                    place := agentsession_path_child(e_s, p_flags[j], e_seq[q], c_depth[q], c_flags[q],
                        c_set[q], c_asst[q], c_comp[q], c_run[q]);
                END IF;
            ELSIF p_parents[j] = '' THEN
                place := agentsession_path_child(e_s, p_flags[j], 0, 0, 0::smallint, 0, 0, 0, 0);
            ELSE
                SELECT e.seq, e.depth, e.flags, e.set_seq, e.asst_seq, e.comp_seq, e.run_seq INTO r
                    FROM agentsession_entries e WHERE e.session_id = p_sessions[i] AND e.entry_id = p_parents[j]
                    ORDER BY e.seq DESC LIMIT 1;
                IF FOUND THEN
                    IF r.depth IS NOT NULL THEN
                        place := agentsession_path_child(e_s, p_flags[j], r.seq, r.depth, r.flags,
                            r.set_seq, r.asst_seq, r.comp_seq, r.run_seq);
                    END IF;
                ELSE
                    q := array_position(added, p_sessions[i] || E'\n' || p_parents[j]);
                    IF q IS NOT NULL THEN
                        q := added_j[q];
                        IF c_pseq[q] IS NOT NULL THEN
                            place := agentsession_path_child(e_s, p_flags[j], e_seq[q], c_depth[q], c_flags[q],
                                c_set[q], c_asst[q], c_comp[q], c_run[q]);
                        END IF;
                    END IF;
                END IF;
            END IF;
            IF place IS NOT NULL THEN
                c_pseq[j] := place[1]; c_depth[j] := place[2]; c_set[j] := place[3];
                c_asst[j] := place[4]; c_comp[j] := place[5]; c_run[j] := place[6];
                c_flags[j] := p_flags[j];
            END IF;
            e_seq[j] := e_s;
        END LOOP;
        FOR j IN off - c + 1 .. off LOOP
            added := added || (p_sessions[i] || E'\n' || p_ids[j]);
            added_j := added_j || j;
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

    INSERT INTO agentsession_entries (session_id, seq, entry_id, raw,
            parent_seq, depth, flags, set_seq, asst_seq, comp_seq, run_seq, kept_id)
        SELECT t.s, t.seq, t.id, t.raw,
            t.pseq, t.depth, t.flags, t.sset, t.asst, t.comp, t.run, CASE WHEN t.pseq IS NULL THEN NULL ELSE t.kept END
        FROM unnest(e_of, e_seq, p_ids, p_raws, c_pseq, c_depth, c_flags, c_set, c_asst, c_comp, c_run, p_kept)
            AS t (s, seq, id, raw, pseq, depth, flags, sset, asst, comp, run, kept)
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
