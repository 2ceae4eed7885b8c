-- agentsession pgstore schema, version 6: notify only while someone
-- listens.
--
-- A transaction that sent pg_notify takes, at its commit, a lock that
-- is global to the server (on the notification queue), so that the
-- commits of all such transactions run one at a time: with a
-- notification in every write (version 5), concurrent appends to
-- different sessions went from about 0.4ms to 1.2ms each. A write now
-- notifies only when a listening Store of its schema is alive.
--
-- agentsession_listeners has a row per listening connection (a Store
-- with subscribers), keyed by its backend pid. The listener holds, for
-- as long as its session lives, the advisory lock (24940, pid)
-- ("al", listener): a row whose lock nobody holds is stale (its backend
-- died, or its pid was reused by a backend that does not listen), and a
-- writer tells a live row from a stale one with
-- pg_try_advisory_xact_lock_shared, which never waits. So a listener
-- that died without removing its row (a crash, a lost connection) keeps
-- nothing on: its lock went with its session. Unlike a look at
-- pg_stat_activity, the test needs no privilege to see other roles'
-- backends and is not fooled by a reused pid. The next listener to
-- start deletes the stale rows.
--
-- The race of a write against a listener that starts: a write that
-- found no listener must not commit after the listener's Subscribe
-- returned. agentsession_notify takes the shared advisory lock
-- (24935, hashtext(current_schema())) ("ag", gate; shared locks do not
-- conflict, so writers do not wait for each other), and only then looks
-- for a listener, with a snapshot taken after the lock (read committed:
-- each statement of the function has its own). The listener, after
-- LISTEN and the insert of its row (each committed by itself), takes
-- the exclusive lock on the gate once and releases it, before Subscribe
-- returns. A write whose look did not see the row took its snapshot
-- before the row was committed, hence its shared lock too, and holds
-- that until its transaction ends: the listener's exclusive lock waits
-- for it, so it committed before Subscribe returned. A write that saw
-- the row notifies, after the LISTEN committed: the listener gets it.
-- Under repeatable read or serializable the snapshot can be older than
-- the lock: such a transaction always notifies.
--
-- The gate is the last lock a write waits for: agentsession_notify is
-- the last statement of every write (and the notifying function is
-- called after the rows are changed), and what comes after the gate
-- (the tries on the listeners' locks, the commit; the cascade of a
-- delete to the entries, whose session row the delete holds) does not
-- wait on a lock pgstore's writes hold. So a writer that holds the gate waits for nobody, and the
-- listener, waiting for those, cannot be part of a deadlock; writers
-- that come while it waits wait behind it for as long.

CREATE TABLE agentsession_listeners (
    pid   integer     PRIMARY KEY,
    since timestamptz NOT NULL DEFAULT now()
);

CREATE OR REPLACE FUNCTION agentsession_notify(
    p_session text, p_kind text, p_from integer, p_to integer, p_generation bigint, p_origin text,
    p_at timestamptz DEFAULT NULL
) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(24935, hashtext(current_schema()));
    IF current_setting('transaction_isolation') <> 'read committed'
        OR EXISTS (SELECT 1 FROM agentsession_listeners l
            WHERE NOT pg_try_advisory_xact_lock_shared(24940, l.pid)) THEN
        PERFORM pg_notify('agentsession', json_build_object(
            'schema', current_schema(), 'id', p_session, 'kind', p_kind,
            'from', p_from, 'to', p_to, 'gen', p_generation, 'origin', p_origin, 'at', p_at)::text);
    END IF;
    RETURN p_session;
END
$$;
