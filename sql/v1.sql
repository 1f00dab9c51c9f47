-- idem schema version 1: the idempotency state machine as SQL functions (docs/postgres.md).
-- Applied by `idemctl pg init` (idem::installPgSchema) inside one transaction that also records
-- the version in idem.migrations; never edited once released: a change is a new file, v2.sql.
--
-- Every function is one statement on the server's clock (clock_timestamp(), read once per call,
-- not now(): a transaction that runs the work between acquire and complete may be long). A row
-- whose expires_at has passed is treated as absent. Fences come from a sequence, so they rise
-- across takeovers, purges and expiry alike. Call them at READ COMMITTED (the default): a
-- concurrent acquire of the same id waits on the row, then sees what the other transaction
-- committed.

CREATE SEQUENCE idem.fence;

CREATE TABLE idem.records (
    id          text PRIMARY KEY CHECK (octet_length(id) BETWEEN 1 AND 1024),
    state       text NOT NULL CHECK (state IN ('STARTED', 'COMPLETED', 'FAILED')),
    token       uuid,                  -- the owner's; NULL after force_fail
    fence       bigint NOT NULL,
    attempt     integer NOT NULL DEFAULT 1,
    lease_until timestamptz,           -- STARTED
    expires_at  timestamptz NOT NULL,  -- past it the row counts as absent
    fingerprint bytea,                 -- NULL: acquired without one (never checked)
    response    bytea,                 -- COMPLETED
    error       text,                  -- FAILED
    policy      text CHECK (policy IN ('retryable', 'terminal')), -- FAILED
    created_at  timestamptz NOT NULL,  -- the first attempt
    started_at  timestamptz NOT NULL,  -- this attempt
    finished_at timestamptz,           -- COMPLETED, FAILED
    op          text,                  -- the last operator action ('force_fail'), who, when, why
    op_by       text,
    op_at       timestamptz,
    op_reason   text
);
-- what a sweep walks in bounded batches
CREATE INDEX records_expires_at ON idem.records (expires_at);

-- Operator actions (force_fail, purge): who, when, why, and the fence the record had. Written only
-- by operators, so it grows at their pace.
CREATE TABLE idem.operations (
    at             timestamptz NOT NULL,
    op             text NOT NULL,
    id             text NOT NULL,
    fence          bigint,
    previous_state text,
    by             text,
    reason         text
);
CREATE INDEX operations_id ON idem.operations (id, at);

CREATE FUNCTION idem.acquire(id text, lease interval DEFAULT '30 seconds', fingerprint bytea DEFAULT NULL,
                             proposed_token uuid DEFAULT NULL, stale_keep interval DEFAULT '1 hour')
RETURNS TABLE (outcome text, token uuid, fence bigint, attempt integer, response bytea, error text,
               time_left interval, lease_until timestamptz, takeover boolean, stored_fingerprint bytea,
               server_time timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t  timestamptz := clock_timestamp();
    tk uuid := coalesce(acquire.proposed_token, gen_random_uuid());
    r  idem.records%ROWTYPE;
BEGIN
    IF acquire.lease IS NULL OR acquire.lease <= interval '0' THEN
        RAISE EXCEPTION 'idem.acquire: lease must be positive' USING ERRCODE = '22023';
    END IF;
    server_time := t;
    LOOP
        SELECT * INTO r FROM idem.records AS x WHERE x.id = acquire.id FOR UPDATE;
        IF NOT FOUND THEN
            INSERT INTO idem.records AS x (id, state, token, fence, lease_until, expires_at, fingerprint,
                                           created_at, started_at)
            VALUES (acquire.id, 'STARTED', tk, nextval('idem.fence'), t + acquire.lease,
                    t + acquire.lease + acquire.stale_keep, acquire.fingerprint, t, t)
            ON CONFLICT ON CONSTRAINT records_pkey DO NOTHING
            RETURNING x.fence INTO fence;
            IF FOUND THEN
                outcome := 'acquired'; token := tk; attempt := 1; takeover := false;
                lease_until := t + acquire.lease; time_left := acquire.lease;
                RETURN NEXT;
                RETURN;
            END IF;
            CONTINUE; -- another transaction inserted it and committed: read and lock that row
        END IF;

        IF r.expires_at <= t THEN -- expired: as if absent, a fresh first attempt
            UPDATE idem.records AS x SET state = 'STARTED', token = tk, fence = nextval('idem.fence'),
                   attempt = 1, lease_until = t + acquire.lease, expires_at = t + acquire.lease + acquire.stale_keep,
                   fingerprint = acquire.fingerprint, response = NULL, error = NULL, policy = NULL,
                   created_at = t, started_at = t, finished_at = NULL, op = NULL, op_by = NULL,
                   op_at = NULL, op_reason = NULL
             WHERE x.id = acquire.id RETURNING x.fence INTO fence;
            outcome := 'acquired'; token := tk; attempt := 1; takeover := false;
            lease_until := t + acquire.lease; time_left := acquire.lease;
            RETURN NEXT;
            RETURN;
        END IF;

        fence := r.fence; attempt := r.attempt; takeover := false;
        IF acquire.fingerprint IS NOT NULL AND r.fingerprint IS NOT NULL
           AND r.fingerprint <> acquire.fingerprint THEN
            outcome := 'mismatch'; stored_fingerprint := r.fingerprint;
            RETURN NEXT;
            RETURN;
        END IF;
        IF r.state = 'COMPLETED' THEN
            outcome := 'duplicate'; response := r.response;
            RETURN NEXT;
            RETURN;
        END IF;
        IF r.state = 'FAILED' AND r.policy = 'terminal' THEN
            outcome := 'failed'; error := r.error;
            RETURN NEXT;
            RETURN;
        END IF;
        IF r.state = 'STARTED' AND r.token = tk THEN -- the same owner asking again (a lost reply)
            outcome := 'acquired'; token := tk; lease_until := r.lease_until;
            time_left := greatest(r.lease_until - t, interval '0');
            RETURN NEXT;
            RETURN;
        END IF;
        IF r.state = 'STARTED' AND r.lease_until > t THEN
            outcome := 'in_progress'; time_left := r.lease_until - t; lease_until := r.lease_until;
            RETURN NEXT;
            RETURN;
        END IF;
        -- a stale lease to take over, or a retryable failure (or a force-failed one): a new attempt
        takeover := r.state = 'STARTED';
        UPDATE idem.records AS x SET state = 'STARTED', token = tk, fence = nextval('idem.fence'),
               attempt = r.attempt + 1, lease_until = t + acquire.lease,
               expires_at = t + acquire.lease + acquire.stale_keep,
               fingerprint = coalesce(r.fingerprint, acquire.fingerprint), response = NULL, error = NULL,
               policy = NULL, started_at = t, finished_at = NULL
         WHERE x.id = acquire.id RETURNING x.fence, x.attempt INTO fence, attempt;
        outcome := 'acquired'; token := tk; lease_until := t + acquire.lease; time_left := acquire.lease;
        RETURN NEXT;
        RETURN;
    END LOOP;
END
$$;

-- STARTED -> COMPLETED for the owner: 'ok' (also for a repeated complete of the same owner, whose
-- first reply was lost) or 'lease_lost' with the row's state now ('missing' when absent or expired).
CREATE FUNCTION idem.complete(id text, token uuid, response bytea, retention interval DEFAULT '24 hours')
RETURNS TABLE (outcome text, state text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    r idem.records%ROWTYPE;
BEGIN
    SELECT * INTO r FROM idem.records AS x WHERE x.id = complete.id AND x.expires_at > t FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'lease_lost'; state := 'missing';
    ELSIF r.token IS DISTINCT FROM complete.token OR r.state = 'FAILED' THEN
        outcome := 'lease_lost'; state := r.state;
    ELSIF r.state = 'COMPLETED' THEN
        outcome := 'ok'; state := r.state;
    ELSE
        UPDATE idem.records AS x SET state = 'COMPLETED', response = complete.response, lease_until = NULL,
               finished_at = t, expires_at = t + complete.retention
         WHERE x.id = complete.id;
        outcome := 'ok'; state := 'COMPLETED';
    END IF;
    RETURN NEXT;
END
$$;

-- The owner gives up: 'release' deletes the row (the next delivery runs again), 'retryable' keeps
-- FAILED (the next acquire starts a new attempt), 'terminal' keeps FAILED (duplicates get the error).
CREATE FUNCTION idem.fail(id text, token uuid, policy text DEFAULT 'release', error text DEFAULT NULL,
                          retention interval DEFAULT '24 hours')
RETURNS TABLE (outcome text, state text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    r idem.records%ROWTYPE;
BEGIN
    IF fail.policy IS NULL OR fail.policy NOT IN ('release', 'retryable', 'terminal') THEN
        RAISE EXCEPTION 'idem.fail: policy must be release, retryable or terminal' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO r FROM idem.records AS x WHERE x.id = fail.id AND x.expires_at > t FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'lease_lost'; state := 'missing';
    ELSIF r.state <> 'STARTED' OR r.token IS DISTINCT FROM fail.token THEN
        outcome := 'lease_lost'; state := r.state;
    ELSIF fail.policy = 'release' THEN
        DELETE FROM idem.records AS x WHERE x.id = fail.id;
        outcome := 'ok'; state := 'missing';
    ELSE
        UPDATE idem.records AS x SET state = 'FAILED', policy = fail.policy, error = fail.error,
               lease_until = NULL, finished_at = t, expires_at = t + fail.retention
         WHERE x.id = fail.id;
        outcome := 'ok'; state := 'FAILED';
    END IF;
    RETURN NEXT;
END
$$;

-- The owner extends its lease from now: 'ok' with the new deadline, or 'lease_lost'.
CREATE FUNCTION idem.renew(id text, token uuid, lease interval DEFAULT '30 seconds',
                           stale_keep interval DEFAULT '1 hour')
RETURNS TABLE (outcome text, state text, lease_until timestamptz, server_time timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    r idem.records%ROWTYPE;
BEGIN
    server_time := t;
    SELECT * INTO r FROM idem.records AS x WHERE x.id = renew.id AND x.expires_at > t FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'lease_lost'; state := 'missing';
    ELSIF r.state <> 'STARTED' OR r.token IS DISTINCT FROM renew.token THEN
        outcome := 'lease_lost'; state := r.state;
    ELSE
        UPDATE idem.records AS x SET lease_until = t + renew.lease,
               expires_at = greatest(x.expires_at, t + renew.lease + renew.stale_keep)
         WHERE x.id = renew.id;
        outcome := 'ok'; state := 'STARTED'; lease_until := t + renew.lease;
    END IF;
    RETURN NEXT;
END
$$;

-- Operator: mark a record FAILED without its token (stuck work). Refuses COMPLETED (its result
-- stays; purge it to run the id again). Clears the token, so the running owner loses its lease.
-- outcome: 'ok', 'not_found' or 'refused'.
CREATE FUNCTION idem.force_fail(id text, reason text DEFAULT NULL, terminal boolean DEFAULT false,
                                who text DEFAULT session_user, retention interval DEFAULT '24 hours')
RETURNS TABLE (outcome text, previous_state text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    r idem.records%ROWTYPE;
BEGIN
    SELECT * INTO r FROM idem.records AS x WHERE x.id = force_fail.id AND x.expires_at > t FOR UPDATE;
    IF NOT FOUND THEN
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

-- Operator: delete a record so the id runs again. The fence sequence keeps rising regardless.
-- outcome: 'ok' (with the state it had) or 'not_found'. An expired row is deleted too, but reported
-- as not found: it already counted as absent.
CREATE FUNCTION idem.purge(id text, who text DEFAULT session_user, reason text DEFAULT NULL)
RETURNS TABLE (outcome text, previous_state text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    r idem.records%ROWTYPE;
BEGIN
    DELETE FROM idem.records AS x WHERE x.id = purge.id RETURNING x.* INTO r;
    IF NOT FOUND OR r.expires_at <= t THEN
        outcome := 'not_found';
    ELSE
        INSERT INTO idem.operations VALUES (t, 'purge', purge.id, r.fence, r.state, purge.who, purge.reason);
        outcome := 'ok'; previous_state := r.state;
    END IF;
    RETURN NEXT;
END
$$;
