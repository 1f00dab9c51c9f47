-- idem schema version 5: least-privilege roles (docs/postgres.md, "Roles"). Applied after v4.sql by
-- `idemctl pg init`, in the same transaction that records the version; never edited once released.
--
-- Until v4 every function ran with its caller's rights (SECURITY INVOKER): a role that may call
-- idem.fail needed DELETE on idem.records, and so could delete any row with a DELETE of its own,
-- bypassing the state machine and the audit trail. From v5 the functions are the only way in:
--
--   * each function runs as the schema's owner (SECURITY DEFINER) with a fixed search_path
--     (pg_catalog, then pg_temp last: every name of schema idem is written qualified), so a caller
--     needs EXECUTE on the function and no right on the tables;
--   * PUBLIC may execute none of them (functions are PUBLIC's by default, which with SECURITY
--     DEFINER would let anyone purge); `idemctl acl ROLE --user NAME --url postgresql://...` prints
--     the GRANTs of each role (service, monitor, operator) for a DBA to run;
--   * idem.operations records the session's role (session_user, which SECURITY DEFINER does not
--     change) beside the `by` a caller gives, so an audit row names who acted however it was called.
--
-- A function a later version drops and makes anew loses its grants: that version grants them again
-- (CREATE OR REPLACE keeps them). Grants a DBA made before v5 (DML on idem.records for the
-- service's role, say) stay until revoked: the printed GRANTs begin by revoking them.

-- The guarded purge (PgStore::purge with what was read, the console's and idemctl's path): the row
-- is locked and compared with what the operator saw; only if unchanged is it purged through
-- idem.purge, in the same statement. Until v4 this was a SELECT ... FOR UPDATE of the client's,
-- which needs UPDATE on the table.
-- outcome: 'ok', 'not_found', or 'changed' with the row's state and attempt now.
CREATE FUNCTION idem.purge_seen(id text, seen_state text, seen_token text, seen_fence bigint,
                                seen_attempt integer, seen_lease_until_ms bigint,
                                who text DEFAULT session_user, reason text DEFAULT NULL)
RETURNS TABLE (outcome text, previous_state text, current_attempt integer)
LANGUAGE plpgsql AS $$
DECLARE
    r idem.records%ROWTYPE;
BEGIN
    SELECT * INTO r FROM idem.records AS x WHERE x.id = purge_seen.id FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'not_found';
        RETURN NEXT;
        RETURN;
    END IF;
    -- what an owner's acquire, renew, complete or fail, a takeover or a force-fail would change
    IF r.state::text IS DISTINCT FROM purge_seen.seen_state
       OR coalesce(r.token::text, '') <> coalesce(purge_seen.seen_token, '')
       OR r.fence IS DISTINCT FROM purge_seen.seen_fence
       OR r.attempt IS DISTINCT FROM purge_seen.seen_attempt
       OR (extract(epoch FROM r.lease_until) * 1000)::bigint IS DISTINCT FROM purge_seen.seen_lease_until_ms THEN
        outcome := 'changed'; previous_state := r.state; current_attempt := r.attempt;
        RETURN NEXT;
        RETURN;
    END IF;
    RETURN QUERY SELECT p.outcome, p.previous_state, r.attempt
                   FROM idem.purge(purge_seen.id, purge_seen.who, purge_seen.reason) AS p;
END
$$;

-- A watcher (the console) registers and leaves through these, so a read-only role needs no write
-- right on idem.watchers. watch() also forgets watchers that died an hour ago.
CREATE FUNCTION idem.watch(name text) RETURNS void
LANGUAGE sql AS $$
    DELETE FROM idem.watchers AS w WHERE w.seen_at < now() - interval '1 hour';
    INSERT INTO idem.watchers AS w (name, seen_at) VALUES (watch.name, now())
        ON CONFLICT (name) DO UPDATE SET seen_at = now();
$$;

CREATE FUNCTION idem.unwatch(name text) RETURNS void
LANGUAGE sql AS $$
    DELETE FROM idem.watchers AS w WHERE w.name = unwatch.name;
$$;

-- who acted, as the server knows it; rows written before v5 have none (NULL, not the installer)
ALTER TABLE idem.operations ADD COLUMN session_role text;
ALTER TABLE idem.operations ALTER COLUMN session_role SET DEFAULT session_user;

ALTER FUNCTION idem.acquire(text, interval, bytea, uuid, interval) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION idem.complete(text, uuid, bytea, interval) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION idem.fail(text, uuid, text, text, interval) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION idem.renew(text, uuid, interval, interval) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION idem.checkpoint(text, uuid, text, bytea) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION idem.sweep(integer) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION idem.force_fail(text, text, boolean, text, interval) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION idem.purge(text, text, text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION idem.purge_seen(text, text, text, bigint, integer, bigint, text, text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION idem.watch(text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION idem.unwatch(text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
-- (idem.notify_changed stays as it is: the trigger runs as whoever changed the row, which from v5
-- is the owner, inside the functions above)

REVOKE ALL ON ALL TABLES IN SCHEMA idem FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA idem FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA idem FROM PUBLIC;
REVOKE ALL ON SCHEMA idem FROM PUBLIC;
-- (a per-schema ALTER DEFAULT PRIVILEGES cannot take back what PUBLIC gets by default: a later
-- version revokes EXECUTE on the functions it adds, as this one does)
