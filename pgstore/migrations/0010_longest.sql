-- agentsession pgstore schema, version 10: each session's longest
-- entry line, so that a load by path holds the store's MaxLineBytes as a
-- whole load does (issue 40). A whole load reads every line and refuses
-- a session with one over the limit; a load by path reads the path's
-- lines only, and a store whose limit is lower than its writer's opened
-- such a session from them.
--
--   longest  the length of the longest entry line the session has held
--            since its last Rewrite by this version or later (a bound:
--            a Rewrite by an older package leaves it as it was, which
--            only makes a load by path read whole)
--
-- Triggers keep it, whatever writes the rows: this package's
-- functions, a replica running an older package, Rewrite's COPY, an
-- UPDATE of a row's raw. The one on inserts runs once per statement, the
-- one on updates of raw for each row it lengthens; both update the
-- session row only when a line longer than any before comes in. (Rows
-- written with triggers off, session_replication_role = replica, are
-- not seen: a copy made that way carries its sessions' longest with
-- them.) The sessions already there get
-- theirs from one scan of the entries' lengths (octet_length reads a
-- stored value's length without decompressing it).

ALTER TABLE agentsession_sessions ADD COLUMN longest bigint NOT NULL DEFAULT 0;

UPDATE agentsession_sessions s SET longest = m.longest
    FROM (SELECT session_id, max(octet_length(raw)) AS longest
        FROM agentsession_entries GROUP BY session_id) m
    WHERE s.id = m.session_id;

CREATE FUNCTION agentsession_note_longest() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agentsession_sessions s SET longest = m.longest
        FROM (SELECT session_id, max(octet_length(raw)) AS longest
            FROM agentsession_new_entries GROUP BY session_id) m
        WHERE s.id = m.session_id AND m.longest > s.longest;
    RETURN NULL;
END;
$$;

CREATE TRIGGER agentsession_entries_longest
    AFTER INSERT ON agentsession_entries
    REFERENCING NEW TABLE AS agentsession_new_entries
    FOR EACH STATEMENT EXECUTE FUNCTION agentsession_note_longest();

CREATE FUNCTION agentsession_note_longer() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agentsession_sessions SET longest = octet_length(NEW.raw)
        WHERE id = NEW.session_id AND longest < octet_length(NEW.raw);
    RETURN NULL;
END;
$$;

CREATE TRIGGER agentsession_entries_longer
    AFTER UPDATE OF raw ON agentsession_entries
    FOR EACH ROW WHEN (octet_length(NEW.raw) > octet_length(OLD.raw))
    EXECUTE FUNCTION agentsession_note_longer();
