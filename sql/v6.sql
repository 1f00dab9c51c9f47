-- idem schema version 6: an operator's force_fail and purge of an id whose first acquire is still
-- in a transaction (docs/postgres.md, "idemctl on PostgreSQL"). Applied after v5.sql by `idemctl
-- pg init`, in the same transaction that records the version; never edited once released.
--
-- A service's transaction that acquired an id for the first time (the transactional mode, or its
-- own BEGIN; SELECT idem.acquire(...)) holds a row no other transaction sees before it commits:
-- force_fail and purge found no row and answered 'not_found' while the id's work was under way.
-- Where they find none they now probe for one: an INSERT of the id, which the primary key's
-- uniqueness check makes wait for a transaction that inserted it and has not ended, as long as
-- the caller's lock_timeout allows (then 55P03, lock_not_available, as for a row lock: idemctl's
-- --lock-timeout, exit 75). The probe's row is never kept: it goes with a subtransaction rolled
-- back at once (its trigger's NOTIFY with it), and it would count as absent even if it stayed
-- (expires_at -infinity, fence 0: no value of the sequence is used). When the transaction waited
-- for commits, the function reads what it committed and goes on as it does for a row it saw
-- at once; when it rolls back, the id is absent ('not_found'). (Under REPEATABLE READ a row
-- committed after the caller's snapshot is a serialization failure, 40001, as any write to it is.)
--
-- force_fail now locks an expired row too (and then answers 'not_found', as before): an expired
-- row that a transaction is taking over is that transaction's work under way, not an absent id.
-- The functions are replaced in place (CREATE OR REPLACE keeps their grants), so they say again
-- what v5 made them: SECURITY DEFINER with a fixed search_path.

-- true: a row of this id was committed while the probe waited for the transaction that inserted
-- it, or was there already (read it again); false: there is none. Only the functions below call
-- it, as the schema's owner: nobody is granted it (and it runs as the owner, as every function of
-- schema idem does from v5).
CREATE FUNCTION idem.committed_meanwhile(id text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
BEGIN
    BEGIN
        INSERT INTO idem.records AS x (id, state, fence, expires_at, created_at, started_at)
        VALUES (committed_meanwhile.id, 'FAILED', 0, '-infinity', clock_timestamp(), clock_timestamp())
        ON CONFLICT ON CONSTRAINT records_pkey DO NOTHING;
        IF NOT FOUND THEN
            RETURN true;
        END IF;
        RAISE EXCEPTION 'idem: the probe of id % is rolled back', committed_meanwhile.id USING ERRCODE = 'IDEM0';
    EXCEPTION WHEN SQLSTATE 'IDEM0' THEN
        RETURN false; -- the probe's row went with the subtransaction: the id is absent
    END;
END
$$;
REVOKE ALL ON FUNCTION idem.committed_meanwhile(text) FROM PUBLIC;

-- A row that keeps coming and going under the probe (committed, then deleted before it is read,
-- three times over) is answered as a held one: 55P03, nothing done.
CREATE OR REPLACE FUNCTION idem.force_fail(id text, reason text DEFAULT NULL, terminal boolean DEFAULT false,
                                           who text DEFAULT session_user, retention interval DEFAULT '24 hours')
RETURNS TABLE (outcome text, previous_state text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    r idem.records%ROWTYPE;
BEGIN
    FOR tries IN 1..4 LOOP
        SELECT * INTO r FROM idem.records AS x WHERE x.id = force_fail.id FOR UPDATE;
        EXIT WHEN FOUND;
        IF tries = 4 THEN
            RAISE EXCEPTION 'idem.force_fail: the row of id % keeps changing', force_fail.id USING ERRCODE = '55P03';
        END IF;
        IF NOT idem.committed_meanwhile(force_fail.id) THEN
            outcome := 'not_found';
            RETURN NEXT;
            RETURN;
        END IF;
    END LOOP;
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

CREATE OR REPLACE FUNCTION idem.purge(id text, who text DEFAULT session_user, reason text DEFAULT NULL)
RETURNS TABLE (outcome text, previous_state text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    r idem.records%ROWTYPE;
BEGIN
    FOR tries IN 1..4 LOOP
        DELETE FROM idem.records AS x WHERE x.id = purge.id RETURNING x.* INTO r;
        EXIT WHEN FOUND;
        IF tries = 4 THEN
            RAISE EXCEPTION 'idem.purge: the row of id % keeps changing', purge.id USING ERRCODE = '55P03';
        END IF;
        IF NOT idem.committed_meanwhile(purge.id) THEN
            outcome := 'not_found';
            RETURN NEXT;
            RETURN;
        END IF;
    END LOOP;
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
    FOR tries IN 1..4 LOOP
        SELECT * INTO r FROM idem.records AS x WHERE x.id = purge_seen.id FOR UPDATE;
        EXIT WHEN FOUND;
        IF tries = 4 THEN
            RAISE EXCEPTION 'idem.purge_seen: the row of id % keeps changing', purge_seen.id USING ERRCODE = '55P03';
        END IF;
        IF NOT idem.committed_meanwhile(purge_seen.id) THEN
            outcome := 'not_found';
            RETURN NEXT;
            RETURN;
        END IF;
    END LOOP;
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
