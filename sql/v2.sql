-- idem schema version 2: recovery points and the sweep (docs/postgres.md). Applied after v1.sql by
-- `idemctl pg init`, in the same transaction that records the version; never edited once released.
--
-- Recovery points (Brandur Leach's atomic phases): the owner records with idem.checkpoint how far
-- its work got; an attempt that takes over an expired lease (or retries after a retryable
-- failure) is told the last phase and its data by idem.acquire, and resumes from there. An id
-- that starts afresh (absent or expired) has none.

ALTER TABLE idem.records
    ADD COLUMN phase      text,        -- the last recovery point of this id's attempts
    ADD COLUMN phase_data bytea,
    ADD COLUMN phase_at   timestamptz;

-- acquire answers two more columns: its result type changes, so it is dropped and made anew
DROP FUNCTION idem.acquire(text, interval, bytea, uuid, interval);

CREATE FUNCTION idem.acquire(id text, lease interval DEFAULT '30 seconds', fingerprint bytea DEFAULT NULL,
                             proposed_token uuid DEFAULT NULL, stale_keep interval DEFAULT '1 hour')
RETURNS TABLE (outcome text, token uuid, fence bigint, attempt integer, response bytea, error text,
               time_left interval, lease_until timestamptz, takeover boolean, stored_fingerprint bytea,
               server_time timestamptz, phase text, phase_data bytea)
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
        -- Answers that change nothing are read without a row lock (locking writes to the row):
        -- a live COMPLETED row or terminal failure, and a payload mismatch, stay what they are
        -- until they expire or an operator purges them. Everything else is decided under the lock.
        SELECT * INTO r FROM idem.records AS x WHERE x.id = acquire.id;
        IF FOUND AND r.expires_at > t THEN
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
        END IF;
        IF FOUND THEN
            SELECT * INTO r FROM idem.records AS x WHERE x.id = acquire.id FOR UPDATE;
        END IF;
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
                   op_at = NULL, op_reason = NULL, phase = NULL, phase_data = NULL, phase_at = NULL
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
            phase := r.phase; phase_data := r.phase_data;
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
        phase := r.phase; phase_data := r.phase_data; -- where the earlier attempt got to
        RETURN NEXT;
        RETURN;
    END LOOP;
END
$$;

-- complete, as in v1 with one statement for the common case: the owner's STARTED row is updated
-- without first being locked by a SELECT ... FOR UPDATE (which writes to the row too); only when
-- no row was updated is it read to say why.
CREATE OR REPLACE FUNCTION idem.complete(id text, token uuid, response bytea, retention interval DEFAULT '24 hours')
RETURNS TABLE (outcome text, state text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    r idem.records%ROWTYPE;
BEGIN
    UPDATE idem.records AS x SET state = 'COMPLETED', response = complete.response, lease_until = NULL,
           finished_at = t, expires_at = t + complete.retention
     WHERE x.id = complete.id AND x.token = complete.token AND x.state = 'STARTED' AND x.expires_at > t;
    IF FOUND THEN
        outcome := 'ok'; state := 'COMPLETED';
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT * INTO r FROM idem.records AS x WHERE x.id = complete.id AND x.expires_at > t;
    IF NOT FOUND THEN
        outcome := 'lease_lost'; state := 'missing';
    ELSIF r.token IS DISTINCT FROM complete.token OR r.state <> 'COMPLETED' THEN
        outcome := 'lease_lost'; state := r.state;
    ELSE -- a repeated complete of the same owner (its first reply was lost)
        outcome := 'ok'; state := r.state;
    END IF;
    RETURN NEXT;
END
$$;

-- The owner records a recovery point: 'ok', or 'lease_lost' with the row's state now ('missing'
-- when absent or expired). Only a STARTED row of this token takes it.
CREATE FUNCTION idem.checkpoint(id text, token uuid, phase text, data bytea DEFAULT NULL)
RETURNS TABLE (outcome text, state text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    r idem.records%ROWTYPE;
BEGIN
    IF checkpoint.phase IS NULL OR checkpoint.phase = '' THEN
        RAISE EXCEPTION 'idem.checkpoint: phase must be non-empty' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO r FROM idem.records AS x WHERE x.id = checkpoint.id AND x.expires_at > t FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'lease_lost'; state := 'missing';
    ELSIF r.state <> 'STARTED' OR r.token IS DISTINCT FROM checkpoint.token THEN
        outcome := 'lease_lost'; state := r.state;
    ELSE
        UPDATE idem.records AS x SET phase = checkpoint.phase, phase_data = checkpoint.data, phase_at = t
         WHERE x.id = checkpoint.id;
        outcome := 'ok'; state := 'STARTED';
    END IF;
    RETURN NEXT;
END
$$;

-- Deletes up to `batch` expired rows, oldest expiry first along the expires_at index, and answers
-- how many. Rows another transaction holds are skipped (SKIP LOCKED), not waited for. Call it
-- again until it answers fewer than `batch`: each call is its own short transaction, never an
-- unbounded DELETE.
CREATE FUNCTION idem.sweep(batch integer DEFAULT 1000)
RETURNS bigint
LANGUAGE sql AS $$
    WITH doomed AS (
        SELECT x.id FROM idem.records AS x
         WHERE x.expires_at <= clock_timestamp()
         ORDER BY x.expires_at
         LIMIT greatest(sweep.batch, 0)
           FOR UPDATE SKIP LOCKED
    ), gone AS (
        DELETE FROM idem.records AS x USING doomed WHERE x.id = doomed.id RETURNING 1
    )
    SELECT count(*) FROM gone
$$;
