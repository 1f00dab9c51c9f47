-- idem schema version 7: one way for an operator's function to lock an id's row (docs/postgres.md).
-- Applied after v6.sql by `idemctl pg init`, in the same transaction that records the version;
-- never edited once released.
--
-- v6 gave force_fail, purge and purge_seen each its own copy of the loop that locks the id's row
-- or, where there is none, probes for a first acquire not yet committed (idem.committed_meanwhile)
-- and reads again. Copies drift; idem.locked_row is that loop once, and the three call it. What
-- they answer, wait for and raise is v6's: 'not_found' for an id with no row, 55P03 past the
-- caller's lock_timeout, and 55P03 naming the function for a row that keeps coming and going
-- under the probe. purge now locks the row and then deletes it, where v6 deleted it in the loop:
-- the same row goes, with the same lock and the same NOTIFY, under the same waits.
--
-- The functions are replaced in place (CREATE OR REPLACE keeps their owner and grants), so they
-- say again what v5 made them: SECURITY DEFINER with a fixed search_path. idem.locked_row, like
-- idem.committed_meanwhile, is granted to nobody: only the functions below call it, as the
-- schema's owner. No role needs `idemctl acl` run again. The upgrade may be run by another role
-- than the one that owns the functions (a superuser, a member of the owner's role): both helpers
-- are then given to the functions' owner, who must be allowed to call them.

-- The row of `id`, locked FOR UPDATE until the caller's transaction ends; no row when the id has
-- none, also after waiting for a transaction that inserted it and rolled back. A row committed
-- while the probe waited is read again; one that keeps coming and going (committed, then deleted
-- before it is read, three times over) is answered as a held one: 55P03, naming `caller`.
CREATE FUNCTION idem.locked_row(id text, caller text) RETURNS SETOF idem.records
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    r idem.records%ROWTYPE;
BEGIN
    FOR tries IN 1..4 LOOP
        SELECT * INTO r FROM idem.records AS x WHERE x.id = locked_row.id FOR UPDATE;
        IF FOUND THEN
            RETURN NEXT r;
            RETURN;
        END IF;
        IF tries = 4 THEN
            RAISE EXCEPTION '%: the row of id % keeps changing', locked_row.caller, locked_row.id
                USING ERRCODE = '55P03';
        END IF;
        IF NOT idem.committed_meanwhile(locked_row.id) THEN
            RETURN;
        END IF;
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION idem.locked_row(text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idem.force_fail(id text, reason text DEFAULT NULL, terminal boolean DEFAULT false,
                                           who text DEFAULT session_user, retention interval DEFAULT '24 hours')
RETURNS TABLE (outcome text, previous_state text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    r idem.records%ROWTYPE;
BEGIN
    SELECT * INTO r FROM idem.locked_row(force_fail.id, 'idem.force_fail');
    IF NOT FOUND THEN
        outcome := 'not_found';
        RETURN NEXT;
        RETURN;
    END IF;
    IF r.expires_at <= t THEN
        outcome := 'not_found';
    ELSIF r.state = 'COMPLETED' THEN
        outcome := 'refused'; previous_state := r.state;
    ELSE
        UPDATE idem.records AS x SET state = 'FAILED', token = NULL, lease_until = NULL,
               policy = CASE WHEN force_fail.terminal THEN 'terminal' ELSE 'retryable' END,
               error = coalesce(force_fail.reason, 'force-failed by an operator'),
               finished_at = t, expires_at = t + force_fail.retention,
               op = 'force_fail', op_by = force_fail.who, op_at = t, op_reason = force_fail.reason
         WHERE x.id = force_fail.id;
        INSERT INTO idem.operations VALUES (t, 'force_fail', force_fail.id, r.fence, r.state, force_fail.who,
                                            force_fail.reason);
        outcome := 'ok'; previous_state := r.state;
    END IF;
    RETURN NEXT;
END
$$;

-- an expired row is deleted too, and answered 'not_found' (it counted as absent), as before
CREATE OR REPLACE FUNCTION idem.purge(id text, who text DEFAULT session_user, reason text DEFAULT NULL)
RETURNS TABLE (outcome text, previous_state text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    r idem.records%ROWTYPE;
BEGIN
    SELECT * INTO r FROM idem.locked_row(purge.id, 'idem.purge');
    IF NOT FOUND THEN
        outcome := 'not_found';
        RETURN NEXT;
        RETURN;
    END IF;
    DELETE FROM idem.records AS x WHERE x.id = purge.id;
    IF r.expires_at <= t THEN
        outcome := 'not_found';
    ELSE
        INSERT INTO idem.operations VALUES (t, 'purge', purge.id, r.fence, r.state, purge.who, purge.reason);
        outcome := 'ok'; previous_state := r.state;
    END IF;
    RETURN NEXT;
END
$$;

-- seen_state NULL or '': the id was read as absent. A row a transaction committed meanwhile is
-- then 'changed' (what the operator did not see is not purged).
CREATE OR REPLACE FUNCTION idem.purge_seen(id text, seen_state text, seen_token text, seen_fence bigint,
                                           seen_attempt integer, seen_lease_until_ms bigint,
                                           who text DEFAULT session_user, reason text DEFAULT NULL)
RETURNS TABLE (outcome text, previous_state text, current_attempt integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r idem.records%ROWTYPE;
BEGIN
    SELECT * INTO r FROM idem.locked_row(purge_seen.id, 'idem.purge_seen');
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

-- The helpers belong to whoever owns the functions that call them as themselves (SECURITY
-- DEFINER): the role that runs this upgrade may be another one.
DO $$
DECLARE
    owner name := (SELECT pg_get_userbyid(proowner) FROM pg_proc
                    WHERE oid = 'idem.force_fail(text, text, boolean, text, interval)'::regprocedure);
BEGIN
    EXECUTE format('ALTER FUNCTION idem.locked_row(text, text) OWNER TO %I', owner);
    EXECUTE format('ALTER FUNCTION idem.committed_meanwhile(text) OWNER TO %I', owner);
END
$$;
