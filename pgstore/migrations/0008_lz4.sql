-- agentsession pgstore schema, version 8: new entries compressed with
-- lz4.
--
-- PostgreSQL compresses a row's large values when it stores them
-- (TOAST): an entry's line of more than about 2 kB, such as a tool
-- result. Its own method, pglz, was about a quarter of the server's
-- work for an append of messages once appends went in batches (version
-- 7; BenchmarkAppend, W10k turns). lz4 does that work several times
-- faster, for lines that take some 10% more room once compressed (W10k:
-- 55% of their size against 50%; the table with its TOAST table and
-- indexes came out the same size).
--
-- Nothing is rewritten: each stored value records how it was
-- compressed, the values already stored stay as they are and read as
-- before, and only the values written from now on use lz4, whichever
-- package version writes them. A server without lz4 (older than 14, or
-- built without it) keeps pglz: this migration then changes nothing.

DO $$
BEGIN
    IF current_setting('server_version_num')::integer >= 140000 THEN
        EXECUTE 'ALTER TABLE agentsession_entries ALTER COLUMN raw SET COMPRESSION lz4';
    END IF;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
    NULL; -- no lz4 in this server
END
$$;
