-- idem schema version 4: live updates. Every statement that changes idem.records sends one
-- NOTIFY on channel idem_records naming the ids it changed, so a watcher (the console) that
-- LISTENs re-reads those rows instead of paging the table again.
--
-- Statement-level triggers with transition tables, not row-level ones: a sweep or a bulk purge
-- deleting thousands of rows sends one notification instead of thousands, and the per-call
-- functions (one row per statement) pay one trigger call as a row trigger would. The payload is
-- a JSON array of the ids, unless it would come near NOTIFY's 8000-byte limit: then it is empty,
-- which means "many rows changed: read the table again". A statement that changed no row (an
-- acquire of an id that exists, ON CONFLICT DO NOTHING) sends nothing.
--
-- NOTIFY has a price: a transaction that sent one takes a database-wide lock at commit, so
-- notifying transactions commit one at a time (16 clients acquiring new ids: about a quarter of
-- the throughput here). The triggers therefore notify only while someone watches: a watcher
-- registers in idem.watchers and renews its row every few seconds; with no row renewed in the
-- last 30 s the trigger returns after one lookup in that small table.
-- Applied after v3.sql by `idemctl pg init`; never edited once released.

CREATE TABLE IF NOT EXISTS idem.watchers (
    name    text PRIMARY KEY, -- the watcher's own (host, pid, a random part)
    seen_at timestamptz NOT NULL
);

CREATE OR REPLACE FUNCTION idem.notify_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
    bytes bigint;
    payload text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM idem.watchers AS w WHERE w.seen_at > now() - interval '30 seconds') THEN
        RETURN NULL;
    END IF;
    SELECT count(*), coalesce(sum(octet_length(c.id) + 4), 0) INTO n, bytes FROM changed AS c;
    IF n = 0 THEN
        RETURN NULL;
    END IF;
    IF bytes > 7000 THEN
        payload := '';
    ELSE
        SELECT json_agg(DISTINCT c.id)::text INTO payload FROM changed AS c;
        IF octet_length(payload) > 7900 THEN -- escapes made it longer than counted
            payload := '';
        END IF;
    END IF;
    PERFORM pg_notify('idem_records', payload);
    RETURN NULL;
END;
$$;

DROP TRIGGER IF EXISTS records_notify_insert ON idem.records;
DROP TRIGGER IF EXISTS records_notify_update ON idem.records;
DROP TRIGGER IF EXISTS records_notify_delete ON idem.records;
-- (a trigger with transition tables has one event; an UPDATE's new rows name the same ids)
CREATE TRIGGER records_notify_insert AFTER INSERT ON idem.records
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION idem.notify_changed();
CREATE TRIGGER records_notify_update AFTER UPDATE ON idem.records
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION idem.notify_changed();
CREATE TRIGGER records_notify_delete AFTER DELETE ON idem.records
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION idem.notify_changed();
